"""The scripted OpenAI-compatible server itself: wire format, rules and test hooks."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from weir_common.testing import ScriptedLLM, ScriptRule
from weir_common.testing.script import hash_embedding, word_chunks

pytestmark = pytest.mark.integration


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


def chat(text: str, stream: bool = False) -> dict[str, object]:
    return {"model": "scripted", "stream": stream, "messages": [{"role": "user", "content": text}]}


async def test_models_and_default_reply(llm: ScriptedLLM) -> None:
    async with httpx.AsyncClient(base_url=llm.base_url) as http:
        models = (await http.get("/models")).json()
        assert models["data"][0]["id"] == "scripted"
        reply = (await http.post("/chat/completions", json=chat("ping"))).json()
    assert reply["choices"][0]["message"]["content"] == "scripted: ping (messages: 1)"


async def test_sse_wire_format(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="one two three", chunk_words=1)])
    body = {**chat("x", stream=True), "stream_options": {"include_usage": True}}
    async with httpx.AsyncClient(base_url=llm.base_url) as http:
        response = await http.post("/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "one two three"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 3


async def test_rules_match_once_counter_and_hooks(llm: ScriptedLLM) -> None:
    async with httpx.AsyncClient(base_url=llm.base_url.removesuffix("/v1")) as http:
        script = [
            {"match": "(?i)hello", "text": "first hello", "once": True},
            {"match": "(?i)hello", "text": "later hello"},
            {"on_request": 4, "text": "fourth"},
        ]
        assert (await http.post("/_script", json={"rules": script})).json() == {"rules": 3}

        async def ask(q: str) -> str:
            r = await http.post("/v1/chat/completions", json=chat(q))
            return str(r.json()["choices"][0]["message"]["content"])

        assert await ask("Hello there") == "first hello"
        assert await ask("hello again") == "later hello"
        assert await ask("other") == "scripted: other (messages: 1)"
        assert await ask("other") == "fourth"
        recorded = (await http.get("/_requests")).json()
        assert [r["body"]["messages"][0]["content"] for r in recorded] == [
            "Hello there",
            "hello again",
            "other",
            "other",
        ]
        assert len(llm.requests) == 4
        await http.post("/_reset")
        assert (await http.get("/_requests")).json() == []
        assert await ask("Hello") == "scripted: Hello (messages: 1)"


async def test_fail_times_then_success(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(fail_times=2, status=503, text="ok")])
    async with httpx.AsyncClient(base_url=llm.base_url) as http:
        codes = [
            (await http.post("/chat/completions", json=chat("x"))).status_code for _ in range(3)
        ]
    assert codes == [503, 503, 200]


async def test_embeddings_endpoint(llm: ScriptedLLM) -> None:
    async with httpx.AsyncClient(base_url=llm.base_url) as http:
        r = (await http.post("/embeddings", json={"model": "s", "input": ["a b", "c"]})).json()
        single = (await http.post("/embeddings", json={"model": "s", "input": "a b"})).json()
    assert [d["index"] for d in r["data"]] == [0, 1]
    assert len(r["data"][0]["embedding"]) == 64
    assert r["data"][0]["embedding"] == single["data"][0]["embedding"]


def test_helpers() -> None:
    assert word_chunks("a b  c d e", 2) == ["a b", "  c d", " e"]
    vec = hash_embedding("hello world")
    assert abs(sum(v * v for v in vec) - 1.0) < 1e-9
    assert vec == hash_embedding("Hello, world!")
    assert abs(sum(v * v for v in hash_embedding("")) - 1.0) < 1e-9


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "rules.json"
    script.write_text(json.dumps([{"match": "ping", "text": "pong"}]), encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "weir_common.testing.scripted_llm",
            "--port",
            str(port),
            "--script",
            str(script),
        ]
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = httpx.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions", json=chat("ping"), timeout=5
                )
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert reply.json()["choices"][0]["message"]["content"] == "pong"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_a_rule_can_answer_only_requests_that_offer_tools(llm: ScriptedLLM) -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    llm.set_script(
        [
            ScriptRule(match="London", text="agent", with_tools=True, once=True),
            ScriptRule(match="London", text="background", with_tools=False),
        ]
    )
    async with httpx.AsyncClient(base_url=llm.base_url) as http:
        plain = (await http.post("/chat/completions", json=chat("London?"))).json()
        agent = await http.post("/chat/completions", json={**chat("London?"), "tools": tools})
    assert plain["choices"][0]["message"]["content"] == "background"
    assert agent.json()["choices"][0]["message"]["content"] == "agent"
