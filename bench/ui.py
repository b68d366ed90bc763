"""The web UI as a browser sees it: page weight, load time and time to the first token.

Starts Kafka/PostgreSQL/Redis/Milvus Lite (ephemeral), an in-process scripted model with zero
delay (answers streamed two words a piece) and the services, then drives the page at `/` in
Debian's headless Chromium (Playwright, the system browser) through `--loads` fresh page
loads, each followed by one message. Measures, in the page itself:

- page weight: bytes of the HTML, scripts and styles one load transfers;
- load → ready: navigation start to the chat socket being open (`#conn` says connected);
- first token: the message's submit to the first answer text painted in the transcript;
- the same turns from a plain WebSocket client (no browser): `chat` frame sent to the first
  `delta` received, so the browser's own share is the difference.

Writes ``bench/results/ui.json``. Goals (issue 12): first token ≤ 300 ms, page ≤ 300 KB.

    .venv/bin/python bench/ui.py [--loads 20] [--kafka-impl apache|tansu]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets
from playwright.async_api import Browser, Page, Response, async_playwright, expect
from turn_overhead import kafka_version, redis_version

from benchlib import pct, write_result
from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services
from weir_deploy.stack import Stack

REPLY = "Sure, here is a short scripted reply of exactly twelve words total."
WEIGHED_TYPES = {"document", "script", "stylesheet"}
FIRST_TOKEN_GOAL_MS = 300.0
PAGE_GOAL_BYTES = 300 * 1024
TIMEOUT_MS = 30_000

# Before the page's own scripts: note when the first `delta` frame reaches the page.
NOTE_FIRST_DELTA = """(() => {
  const Native = window.WebSocket;
  window.firstDeltaAt = null;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (window.firstDeltaAt !== null) return;
        try {
          if (JSON.parse(event.data).type === "delta") window.firstDeltaAt = performance.now();
        } catch {}
      });
    }
  };
})();"""

# In the page: resolve with ms from the next submit to the first answer text painted, and
# to the first `delta` frame's arrival.
WATCH_FIRST_TOKEN = """() => {
  const transcript = document.getElementById("transcript");
  const before = transcript.querySelectorAll(".turn.assistant").length;
  let sent = null;
  const mark = () => { sent = performance.now(); };
  document.addEventListener("submit", mark, { capture: true, once: true });
  window.firstToken = new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      const answers = transcript.querySelectorAll(".turn.assistant");
      if (sent === null || answers.length <= before) return;
      const md = answers[answers.length - 1].querySelector(".md");
      if (md && md.textContent.trim() && !md.querySelector(".typing")) {
        observer.disconnect();
        resolve({ paint: performance.now() - sent, frame: window.firstDeltaAt - sent });
      }
    });
    observer.observe(transcript, { childList: true, subtree: true, characterData: true });
  });
}"""


async def weigh(responses: list[Response]) -> dict[str, int]:
    """Bytes per resource type (body and headers as transferred) of one page load."""
    found: dict[str, int] = {"files": 0, "body_bytes": 0, "header_bytes": 0}
    for response in responses:
        if response.request.resource_type not in WEIGHED_TYPES:
            continue
        sizes = await response.request.sizes()
        found["files"] += 1
        found["body_bytes"] += sizes["responseBodySize"]
        found["header_bytes"] += sizes["responseHeadersSize"]
    return found


async def one_load(browser: Browser, base_url: str, i: int) -> dict[str, Any]:
    """A fresh browser profile loads the page and sends one message."""
    context = await browser.new_context(
        base_url=base_url, extra_http_headers={"X-User-Id": f"bench-ui-{new_id()[:6]}"}
    )
    try:
        await context.add_init_script(NOTE_FIRST_DELTA)
        page: Page = await context.new_page()
        responses: list[Response] = []
        # a lambda, not `responses.append`: Playwright marks its handlers with an attribute
        page.on("response", lambda response: responses.append(response))  # noqa: PLW0108
        began = time.perf_counter()
        await page.goto("/")
        await expect(page.locator("#conn")).to_have_text("connected", timeout=TIMEOUT_MS)
        ready_ms = (time.perf_counter() - began) * 1000
        # a person reads the page before typing: send once its own start-up requests are done
        await page.wait_for_load_state("networkidle")
        await page.evaluate(WATCH_FIRST_TOKEN)
        await page.locator("#message").fill(f"hello from the browser, message {i}")
        await page.locator("#message").press("Enter")
        first = await page.evaluate("window.firstToken")
        last = page.locator(".turn.assistant").last
        await expect(last).to_have_class("turn assistant done", timeout=TIMEOUT_MS)
        weight = await weigh(responses)
        return {
            "ready_ms": ready_ms,
            "first_token_ms": float(first["paint"]),
            "first_frame_ms": float(first["frame"]),
            **weight,
        }
    finally:
        await context.close()


def chat_frame(text: str) -> dict[str, Any]:
    """A `chat` frame with every field the page sends (a new conversation each)."""
    return {
        "type": "chat",
        "text": text,
        "conversation_id": new_id(),
        "id": new_id(),
        "private": False,
        "knowledge": True,
        "tools": True,
    }


async def socket_first_deltas(base_url: str, turns: int) -> list[float]:
    """ms from a `chat` frame to its first `delta`, each turn a fresh user on a new socket."""
    url = base_url.replace("http", "ws") + "/ws/chat"
    found: list[float] = []
    for i in range(turns):
        headers = {"X-User-Id": f"bench-ws-{new_id()[:6]}"}
        async with websockets.connect(url, additional_headers=headers) as ws:
            async with asyncio.timeout(TIMEOUT_MS / 1000):
                assert json.loads(await ws.recv())["type"] == "ready"
                began = time.perf_counter()
                await ws.send(json.dumps(chat_frame(f"hello from a socket, {i}")))
                first: float | None = None
                while True:
                    frame = json.loads(await ws.recv())
                    if frame["type"] == "delta" and first is None:
                        first = (time.perf_counter() - began) * 1000
                    if frame["type"] in ("done", "error") and frame.get("run_id"):
                        break
        if first is not None:
            found.append(first)
    return found


async def drive(base_url: str, loads: int) -> tuple[list[dict[str, Any]], str]:
    """Warm up once, then `loads` measured loads; the browser's version."""
    executable = shutil.which("chromium")
    if executable is None:
        raise RuntimeError("chromium is missing: run deploy/install-system.sh")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox"]
        )
        try:
            await one_load(browser, base_url, -1)
            results = [await one_load(browser, base_url, i) for i in range(loads)]
            return results, browser.version
        finally:
            await browser.close()


async def bench(loads: int, impl: str) -> dict[str, Any]:
    """Start everything, measure, stop everything (also on error)."""
    rule = ScriptRule(text=REPLY, chunk_words=2)
    async with (
        Stack(("kafka", "postgres", "redis", "milvus"), ephemeral=True, kafka_impl=impl) as stack,
        ScriptedLLM(rules=[rule]) as llm,
    ):
        logs = Path(tempfile.mkdtemp(prefix="weir-bench-ui-logs-"))
        services = Services(
            stack.env(),
            logs,
            gateway_port=free_port(),
            extra_env={
                **LOOPBACK_PROXY_AUTH,
                "RATE_LIMIT_CHAT": "1000000/minute",
                "TOPIC_PREFIX": f"benchui{new_id()[:8]}.",
                "LLM_MODEL": "openai/scripted",
                "LLM_API_BASE": llm.base_url,
                "LLM_API_KEY": "sk-scripted",
            },
        )
        async with services:
            load_at_start = round(os.getloadavg()[0], 2)
            results, chromium = await drive(services.url("gateway"), loads)
            sockets = await socket_first_deltas(services.url("gateway"), loads)
            if services.exited():
                raise RuntimeError(f"services died: {services.exited()} (logs in {logs})")
        engine = {
            "kafka_impl": impl,
            "kafka_version": kafka_version(impl),
            "redis": await redis_version(stack.env()["REDIS_URL"]),
            "browser": f"chromium {chromium}",
        }
    firsts = [r["first_token_ms"] for r in results]
    frames = [r["first_frame_ms"] for r in results]
    readies = [r["ready_ms"] for r in results]
    weight = results[-1]
    return {
        "loads": loads,
        "first_token_p50_ms": pct(firsts, 50),
        "first_token_p95_ms": pct(firsts, 95),
        "first_token_mean_ms": round(statistics.fmean(firsts), 2),
        "page_first_delta_frame_p50_ms": pct(frames, 50),
        "page_first_delta_frame_p95_ms": pct(frames, 95),
        "frame_to_paint_p50_ms": pct([a - b for a, b in zip(firsts, frames, strict=True)], 50),
        "socket_first_delta_p50_ms": pct(sockets, 50),
        "socket_first_delta_p95_ms": pct(sockets, 95),
        "browser_share_p50_ms": round(pct(firsts, 50) - pct(sockets, 50), 2),
        "load_to_ready_p50_ms": pct(readies, 50),
        "load_to_ready_p95_ms": pct(readies, 95),
        "page_files": weight["files"],
        "page_body_bytes": weight["body_bytes"],
        "page_header_bytes": weight["header_bytes"],
        "goals": {
            "first_token_p95_ms_at_most": FIRST_TOKEN_GOAL_MS,
            "first_token_met": pct(firsts, 95) <= FIRST_TOKEN_GOAL_MS,
            "page_bytes_at_most": PAGE_GOAL_BYTES,
            "page_met": weight["body_bytes"] <= PAGE_GOAL_BYTES,
        },
        "engine": engine,
        "load_avg_1m_at_start": load_at_start,  # other work on the 2 shared cores
    }


def main() -> None:
    """Parse flags, run the benchmark, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument(
        "--kafka-impl", choices=("apache", "tansu"), default=os.environ.get("KAFKA_IMPL", "apache")
    )
    args = parser.parse_args()
    result = asyncio.run(bench(args.loads, args.kafka_impl))
    out = write_result("ui", result)
    print(out)
    print(
        f"first token p50 {result['first_token_p50_ms']} ms, p95 {result['first_token_p95_ms']} ms;"
        f" page {result['page_body_bytes']} bytes in {result['page_files']} files"
    )


if __name__ == "__main__":
    main()
