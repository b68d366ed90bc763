"""The browser tier: Debian's headless Chromium driven by Playwright, against the same
product the end-to-end tests use (`tests/conftest.py`, one product per pytest session).
The trusted-proxy identity headers name the user (and the admin) of each browser context;
Chromium sends them on the page's HTTP calls and on its WebSocket alike."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from weir_deploy.services import Services

SCREENSHOTS = Path(__file__).parents[2] / ".data" / "screenshots"
Frame = dict[str, Any]
ENDED = re.compile(r"\b(done|error)$")

expect.set_options(timeout=30_000)


@dataclass
class Tab:
    """A page of the web UI, with every WebSocket frame it sent and received."""

    page: Page
    sent: list[Frame] = field(default_factory=list)
    received: list[Frame] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def record(self) -> None:
        """Keep the frames of every socket the page opens (call before it loads)."""

        def on_socket(ws: Any) -> None:
            ws.on("framesent", lambda payload: self.sent.append(json.loads(payload)))
            ws.on("framereceived", received)

        def received(payload: str | bytes) -> None:
            self.received.append(json.loads(payload))
            self.arrived.set()

        self.page.on("websocket", on_socket)

    def frames(self, kind: str) -> list[Frame]:
        """The received frames of one type."""
        return [frame for frame in self.received if frame.get("type") == kind]

    async def shot(self, name: str) -> None:
        """A screenshot under `.data/screenshots/` (a test artifact, not committed)."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)

    async def until(self, ready: Callable[[], bool], timeout_s: float = 30.0) -> None:
        """Wait until `ready()` (e.g. a frame arrived); fail after `timeout_s`."""
        async with asyncio.timeout(timeout_s):
            while not ready():
                self.arrived.clear()
                await self.arrived.wait()

    async def connected(self) -> None:
        """Wait until the chat socket is open."""
        await expect(self.page.locator("#conn")).to_have_text("connected")

    async def send(self, text: str) -> Frame:
        """Type and send a chat message; the `done` (or `error`) frame of its run."""
        answers = self.page.locator(".turn.assistant")
        before = await answers.count()
        await self.page.locator("#message").fill(text)
        await self.page.locator("#message").press("Enter")
        await expect(answers.nth(before)).to_have_class(ENDED)
        finished = [f for f in self.received if f.get("type") in ("done", "error")]
        assert finished, self.received
        return finished[-1]


OpenTab = Callable[..., Awaitable[Tab]]


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium from the system (never a downloaded browser)."""
    executable = shutil.which("chromium")
    assert executable, "chromium is missing: deploy/install-system.sh installs it"
    async with async_playwright() as playwright:
        found = await playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield found
        await found.close()


@pytest.fixture
async def open_tab(browser: Browser, product: Services) -> AsyncIterator[OpenTab]:
    """`await open_tab(user, role="user", path="/")`: a fresh browser profile of that user
    with the page loaded."""
    contexts: list[BrowserContext] = []

    async def open_one(user: str, role: str = "user", path: str = "/") -> Tab:
        assert not product.exited(), f"services died: {product.exited()}"
        context = await browser.new_context(
            base_url=product.url("gateway"),
            extra_http_headers={"X-User-Id": user, "X-User-Role": role},
            locale="en-US",
        )
        contexts.append(context)
        tab = Tab(await context.new_page())
        tab.record()
        await tab.page.goto(path)
        return tab

    yield open_one
    for context in contexts:
        await context.close()
