"""WebSocket chat clients of the load benchmark: one user and one conversation each.

Each client is its own user (`X-User-Id` from loopback: the stack's trusted-proxy identity)
with its own conversation, and sends its next message only after the previous `done`. A
turn is `done` (its `done` frame came), `error` (an `error` frame, or the socket closed) or
`unanswered` (no `done` within `TURN_TIMEOUT_S`); after an unanswered or broken turn the
client reconnects, so a late frame of the old run cannot be taken for the next one's.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

TURN_TIMEOUT_S = 90.0
#: What each client says, by workload; every message its own text, as people's are (no cache
#: of query vectors serves it): `{tag}` is four characters (digits, consonants) of the
#: client and turn numbers, the same size on every turn, so the message stays the same kind
#: of message all along. (It once was "{client}-{n}": from turn 10 on, clients 100 and up
#: said five digits, one more than the router's rules let small talk keep, and half of a
#: soak's turns from the tenth on took the knowledge route.) "chat": small talk, a plain-chat turn
#: (memory, route, answer, judge, record; the router's rules leave the tool catalogue out).
#: "knowledge": the same greeting with a tail the rules read as a question: the knowledge
#: route (a search of the empty knowledge base, and the message matched against the tool
#: catalogue). "returning": the small talk of "chat", each turn in a new conversation of
#: the client's user, as a user who comes back: from the second turn on memory holds their
#: earlier conversations, so every turn recalls (embeds the message, searches memories
#: and the turn log) before it is answered.
SMALL_TALK = "hi there! how are you doing today, friend {tag}?"
MESSAGES = {
    "chat": SMALL_TALK,
    "knowledge": "hello, how are you doing today? (client {client}, message {n})",
    "returning": SMALL_TALK,
}
NEW_CONVERSATION_EACH_TURN = frozenset({"returning"})
#: digits and consonants: no tag spells a word the router's rules could read
_TAG_DIGITS = "0123456789bcdfghjklmnpqrstvwxz"
MAX_CLIENTS = 1000  # tags are distinct for fewer clients than this, each under 810 turns
CONNECT_TIMEOUT_S = 60.0
CONNECTS_AT_ONCE = 20


def tag(client: int, n: int) -> str:
    """Four characters (base 30: `_TAG_DIGITS`) of `n * MAX_CLIENTS + client`: client 3's
    second turn is "026r"."""
    base = len(_TAG_DIGITS)
    value, out = (n * MAX_CLIENTS + client) % base**4, ""
    for _ in range(4):
        value, digit = divmod(value, base)
        out = _TAG_DIGITS[digit] + out
    return out


@dataclass(frozen=True)
class Turn:
    """One chat turn as the client saw it (times from `time.monotonic()`)."""

    client: int
    started: float
    ended: float
    status: str  # done | error | unanswered
    first_delta_s: float | None
    detail: str = ""

    @property
    def latency_s(self) -> float:
        """Send to `done` (or to the error / time-out)."""
        return self.ended - self.started


class Client:
    """One user with one conversation on one WebSocket."""

    def __init__(self, url: str, index: int, user: str, workload: str = "chat") -> None:
        self.url = url
        self.index = index
        self.user = user
        self.message = MESSAGES[workload]
        self.returning = workload in NEW_CONVERSATION_EACH_TURN
        self.conversation = f"load-{index}"
        self.sent = 0
        self._ws: ClientConnection | None = None

    async def connect(self) -> None:
        """Open the socket and wait for its `ready` frame."""
        headers = {"X-User-Id": self.user}
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            self._ws = await websockets.connect(
                self.url, additional_headers=headers, max_size=None, ping_interval=None
            )
            while json.loads(await self._ws.recv())["type"] != "ready":
                pass

    async def close(self) -> None:
        """Close the socket (if open)."""
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def turn(self) -> Turn:
        """Send the next message and wait for its end."""
        if self._ws is None:
            await self.connect()
        assert self._ws is not None
        self.sent += 1
        text = self.message.format(client=self.index, n=self.sent, tag=tag(self.index, self.sent))
        if self.returning:
            self.conversation = f"load-{self.index}-{self.sent}"
        frame = {"type": "chat", "text": text, "conversation_id": self.conversation}
        began = time.monotonic()
        first: float | None = None
        status, detail = "unanswered", ""
        try:
            await self._ws.send(json.dumps(frame))
            async with asyncio.timeout(TURN_TIMEOUT_S):
                status, detail, first = await self._until_end(self._ws, began)
        except TimeoutError:
            pass
        except websockets.ConnectionClosed as exc:
            status, detail = "error", f"socket closed: {exc}"
        ended = time.monotonic()
        if status != "done":
            await self.close()
        return Turn(self.index, began, ended, status, first, detail)

    @staticmethod
    async def _until_end(ws: ClientConnection, began: float) -> tuple[str, str, float | None]:
        run_id: str | None = None
        first: float | None = None
        while True:
            frame: dict[str, Any] = json.loads(await ws.recv())
            kind, of = frame.get("type"), frame.get("run_id")
            if kind == "accepted":
                run_id = of
            elif of is not None and run_id is not None and of != run_id:
                continue  # a frame of another run (never expected: one run at a time)
            elif kind == "delta" and first is None:
                first = time.monotonic() - began
            elif kind == "error":
                return "error", str(frame.get("code") or frame.get("message") or frame), first
            elif kind == "done":
                return "done", "", first


async def connect_all(clients: list[Client]) -> None:
    """Connect every client, `CONNECTS_AT_ONCE` at a time."""
    gate = asyncio.Semaphore(CONNECTS_AT_ONCE)

    async def one(client: Client) -> None:
        async with gate:
            await client.connect()

    await asyncio.gather(*(one(c) for c in clients))


async def chat(
    clients: list[Client], turns: int | None, until: float | None, into: list[Turn] | None = None
) -> list[Turn]:
    """Every client chats: `turns` turns each, or new turns until monotonic time `until`.

    The turns are appended to `into` (when given) as they end, and returned.
    """
    done: list[Turn] = [] if into is None else into

    async def one(client: Client) -> None:
        count = 0
        while (turns is None or count < turns) and (until is None or time.monotonic() < until):
            done.append(await client.turn())
            count += 1

    await asyncio.gather(*(one(c) for c in clients))
    return done
