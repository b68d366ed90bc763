"""Helpers of the end-to-end tests (the `product` fixture they share with the browser tier
lives in `tests/conftest.py`): chat clients, another gateway of the same product."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from weir_common.events import new_id
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services

from ..conftest import mcp_servers

Frame = dict[str, Any]
FRAME_TIMEOUT_S = 30.0


def another_gateway(
    product: Services, name: str, extra_env: dict[str, str], *, supervise: bool = False
) -> Services:
    """One more gateway of the same product (its own reply topic), with `extra_env` on top
    of the product's settings; the identity settings too when `extra_env` names any."""
    own_auth = any(k.startswith("AUTH_") for k in extra_env)
    env = {k: v for k, v in product.base_env.items()
           if k.isupper() and not (own_auth and k.startswith("AUTH_"))}  # fmt: skip
    return Services(
        env,
        Path(tempfile.mkdtemp(prefix=f"weir-e2e-{name}-")),
        names=["gateway"],
        gateway_port=free_port(),
        extra_env={"INSTANCE_ID": f"{name}-{new_id()[:6]}", **extra_env},
        supervise=supervise,
    )


@dataclass
class Offline:
    """The product without a model (answers come from the offline responder), with the time
    and filesystem MCP servers: memory alone in one set (so it can restart), gateway,
    harness, router and tools in another."""

    front: Services
    memory: Services

    def http(self, user: str, role: str = "user") -> httpx.AsyncClient:
        """An HTTP client of the gateway as `user`."""
        headers = {"X-User-Id": user, "X-User-Role": role}
        return httpx.AsyncClient(base_url=self.front.url("gateway"), headers=headers, timeout=30)

    async def restart_memory(self) -> None:
        """Stop the memory service, start it again, wait until it has its partitions."""
        await self.memory.stop()
        await self.memory.start()
        async with httpx.AsyncClient(base_url=self.memory.url("memory")) as http:
            for _ in range(200):
                if (await http.get("/ready")).json()["ready"]:
                    return
                await asyncio.sleep(0.1)
        raise AssertionError("memory did not get its partitions back")


@pytest.fixture(scope="session")
async def offline(stack_env: dict[str, str], shared_files: Path) -> AsyncIterator[Offline]:
    """One offline product for the modules that need no model (a start of services is
    ~25 s of the tier)."""
    logs = Path(tempfile.mkdtemp(prefix="weir-e2e-offline-"))
    env = {"TOPIC_PREFIX": f"e2eoff{new_id()[:6]}.", "LLM_MODEL": "", "BACKOFF_BASE_S": "0.2"}
    memory = Services(stack_env, logs, names=("memory",), extra_env=env)
    front = Services(
        stack_env,
        logs,
        names=("gateway", "harness", "router", "tools"),
        gateway_port=free_port(),
        extra_env={
            **env,
            **LOOPBACK_PROXY_AUTH,
            "WEIR_MEMORY_URL": memory.url("memory"),
            "MCP_SERVERS": mcp_servers(shared_files),
        },
    )
    async with memory, front:
        yield Offline(front, memory)


class ChatClient:
    """A WebSocket chat client that reads frames until a run ends."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.frames: list[Frame] = []
        self.titles: list[Frame] = []  # `title` frames: about a conversation, not a turn

    async def recv(self) -> Frame:
        """The next frame (a test fails rather than wait forever)."""
        async with asyncio.timeout(FRAME_TIMEOUT_S):
            frame: Frame = json.loads(await self.ws.recv())
        self.frames.append(frame)
        return frame

    async def send(self, frame: Frame | str) -> None:
        """Send a frame (a dict as JSON, a str as it is)."""
        await self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def turn(self, text: str, **extra: Any) -> list[Frame]:
        """Send a chat message; return its frames from `accepted` to `done` or `error`.

        A `title` frame (an earlier turn's conversation got its title) may arrive at any
        point; it is kept in `titles`, not among the turn's frames.
        """
        await self.send({"type": "chat", "text": text, **extra})
        frames: list[Frame] = []
        while True:
            frame = await self.recv()
            if frame["type"] == "title":
                self.titles.append(frame)
                continue
            frames.append(frame)
            if frame["type"] in ("done", "error") and frame.get("run_id"):
                return frames


@pytest.fixture
async def chat(product: Services) -> AsyncIterator[ChatClient]:
    """A connected client of a fresh user; its `ready` frame already read."""
    assert not product.exited(), f"services died: {product.exited()}"
    url = product.url("gateway").replace("http", "ws") + "/ws/chat"
    async with websockets.connect(url, additional_headers={"X-User-Id": f"u-{new_id()[:6]}"}) as ws:
        client = ChatClient(ws)
        assert (await client.recv())["type"] == "ready"
        yield client


def messages_for(llm: ScriptedLLM, question: str) -> list[dict[str, Any]]:
    """The messages the router sent with `question` (memory's own model calls excluded)."""
    for body in reversed(llm.requests):
        messages: list[dict[str, Any]] = body["messages"]
        last = str(messages[-1].get("content"))
        if messages[-1]["role"] == "user" and "<user_query>" in last and question in last:
            return messages
    raise AssertionError(f"the model never saw {question!r}")


def prompt_for(llm: ScriptedLLM, question: str) -> str:
    """Every message the router sent with `question` (memory is fenced in the user message)."""
    return "\n".join(str(m["content"]) for m in messages_for(llm, question))


class Person:
    """One user of the product, able to open conversations."""

    def __init__(self, product: Services, user_id: str) -> None:
        self.url = product.url("gateway").replace("http", "ws") + "/ws/chat"
        self.user_id = user_id

    async def say(self, text: str, conversation: str, **extra: Any) -> list[dict[str, Any]]:
        """One turn in `conversation`; returns its frames."""
        headers = {"X-User-Id": self.user_id}
        async with websockets.connect(self.url, additional_headers=headers) as ws:
            client = ChatClient(ws)
            assert (await client.recv())["type"] == "ready"
            frames = await client.turn(text, conversation_id=conversation, **extra)
        assert frames[-1]["type"] == "done", frames[-1]
        return frames


@pytest.fixture
def person(product: Services) -> Person:
    """A fresh user."""
    assert not product.exited(), f"services died: {product.exited()}"
    return Person(product, f"mem-{new_id()[:8]}")
