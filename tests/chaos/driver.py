"""The chaos driver: WebSocket clients that send runs, reconnect and resume, and a ledger of
every run and every disruption (a killed service, a restarted engine), shared by the chaos
tier (tests/chaos) and `bench/chaos.py`.

Each client is one user with one conversation. A message is tracked from `chat` to its one
final frame (`done` or `error`): `accepted` gives its `run_id`. When the socket drops, the
client reconnects with backoff and sends `resume` for each unfinished run with the last
piece it has (the gateway answers `resumed`, then the pieces after it, the live rest and
the one final frame); a message that was sent but never accepted is sent again under a new id (a
new message, so its side effects cannot be confused with the lost one's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
import websockets

log = structlog.get_logger(__name__)

Frame = dict[str, Any]
FINAL = ("done", "error")
ROUTES = ("chat", "rag", "tool", "react")
DOC_NAME = "quillfeather.md"
DOC_TEXT = (
    "# The Quillfeather protocol\n\n"
    "The Quillfeather protocol requires every courier to sign the ledger twice: once at the "
    "depot and once at the door. Parcels that miss a signature go back to the depot.\n"
)
TOOL_ANSWER = "It is the time the tool returned, in Tokyo."


def message_text(route: str, mid: str) -> str:
    """The text of a message of `route`; `mid` makes it unique (and is the note's text)."""
    if route == "chat":
        return f"I like message {mid}."
    if route == "rag":
        return f"What does the Quillfeather protocol require? Ref {mid}."
    if route == "tool":
        return f"What time is it in Tokyo? Ref {mid}."
    return f"Send a message to the team notebook: note {mid}"


@dataclass
class Message:
    """One chat message and everything its run sent back."""

    mid: str
    route: str
    client: int
    text: str
    sent_at: float | None = None
    run_id: str | None = None
    accepted_at: float | None = None
    frames: list[Frame] = field(default_factory=list)
    pieces: dict[int, str] = field(default_factory=dict)  # delta index → text, this attempt
    attempt: int = 1
    repeated_pieces: int = 0  # a piece delivered twice
    finals: list[Frame] = field(default_factory=list)
    final_at: float | None = None
    resumes: int = 0
    superseded: bool = False
    given_up: bool = False

    @property
    def finished(self) -> bool:
        """Whether a final frame arrived."""
        return bool(self.finals)

    @property
    def open(self) -> bool:
        """Sent, not yet finished, still waited for (neither superseded nor given up)."""
        waited = not (self.superseded or self.given_up)
        return self.sent_at is not None and waited and not self.finished

    def last_piece(self) -> int:
        """The index of the last piece received with none missing before it (-1: none)."""
        index = -1
        while index + 1 in self.pieces:
            index += 1
        return index

    def stream_text(self) -> str | None:
        """The streamed answer as received (None: no piece came, or one is missing)."""
        if not self.pieces or self.last_piece() != max(self.pieces):
            return None
        return "".join(self.pieces[i] for i in range(len(self.pieces)))

    def record(self, frame: Frame, now: float) -> None:
        """Keep one frame of the run; a final one also marks when the answer came."""
        kind = frame.get("type")
        if kind == "reset":
            self.attempt, self.pieces = int(frame["attempt"]), {}
        elif kind == "delta":
            index = int(frame["index"])
            self.repeated_pieces += index in self.pieces
            self.pieces[index] = str(frame["text"])
        if kind not in FINAL:
            self.frames.append(frame)
            return
        self.finals.append(frame)
        if self.final_at is None:
            self.final_at = now


@dataclass
class Disruption:
    """A killed service or a stopped engine: when, and which runs were in flight then."""

    victim: str
    at: float
    inflight: list[str]
    back_at: float | None = None
    failed: str | None = None


@dataclass
class Ledger:
    """Every message and every disruption of one load."""

    messages: dict[str, Message] = field(default_factory=dict)
    disruptions: list[Disruption] = field(default_factory=list)
    connection_errors: list[Frame] = field(default_factory=list)
    reconnects: int = 0
    unsent: int = 0
    enough: bool = False  # set by a disruption that needs no more messages sent
    started: float = field(default_factory=time.monotonic)

    def open_mids(self) -> list[str]:
        """Messages sent and not yet answered."""
        return [m.mid for m in self.messages.values() if m.open]

    def disrupt(self, victim: str) -> Disruption:
        """Record that `victim` goes down now."""
        event = Disruption(victim, time.monotonic(), self.open_mids())
        self.disruptions.append(event)
        log.info("chaos.disrupt", victim=victim, inflight=len(event.inflight))
        return event

    def accepted(self) -> list[Message]:
        """Messages that got a run (superseded resends excluded: they have none)."""
        return [m for m in self.messages.values() if m.run_id is not None]


@dataclass(frozen=True)
class Plan:
    """What the load sends: `runs` messages over `clients` users, routes in turn."""

    runs: int
    clients: int
    inflight: int = 2
    routes: Sequence[str] = ROUTES
    prefix: str = "m"
    answer_timeout_s: float = 180.0
    max_sending_s: float = 240.0

    def user(self, client: int) -> str:
        """The user id of client number `client`."""
        return f"chaos-{self.prefix}-{client}"

    def messages(self) -> list[Message]:
        """The messages, each tagged with its client."""
        out = []
        for index in range(self.runs):
            route = self.routes[index % len(self.routes)]
            mid = f"{self.prefix}{index:04d}r0"
            out.append(Message(mid, route, index % self.clients, message_text(route, mid)))
        return out


class Client:
    """One user on one socket: sends its messages, reconnects, resumes unfinished runs."""

    def __init__(
        self, index: int, url: str, user: str, messages: list[Message], ledger: Ledger, plan: Plan
    ) -> None:
        self.index = index
        self.url = url
        self.user = user
        self.conversation = f"conv-{user}"
        self.queue = list(messages)
        self.ledger = ledger
        self.plan = plan
        self.by_run: dict[str, Message] = {}
        self.early: dict[str, list[Frame]] = {}
        self.changed = asyncio.Event()

    def _mine(self) -> list[Message]:
        return [m for m in self.ledger.messages.values() if m.client == self.index]

    def done(self) -> bool:
        """Nothing left to send and nothing open."""
        return not self.queue and not any(m.open for m in self._mine())

    async def run(self, deadline: float) -> None:
        """Connect, send and read until done or `deadline` (monotonic)."""
        backoff = 0.2
        while not self.done() and time.monotonic() < deadline:
            try:
                async with websockets.connect(
                    self.url, additional_headers={"X-User-Id": self.user}, open_timeout=5
                ) as ws:
                    backoff = 0.2
                    await self._session(ws, deadline)
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
                log.info("chaos.client_disconnected", client=self.index, error=repr(exc))
            if self.done():
                return
            self.ledger.reconnects += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def _session(self, ws: websockets.ClientConnection, deadline: float) -> None:
        ready = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if ready.get("type") != "ready":
            self.ledger.connection_errors.append(ready)
        await self._resume(ws)
        sender = asyncio.create_task(self._send_loop(ws))
        try:
            while not self.done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                try:
                    raw = await asyncio.wait_for(ws.recv(), min(remaining, 5.0))
                except TimeoutError:
                    continue
                self._on_frame(json.loads(raw))
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender

    async def _resume(self, ws: websockets.ClientConnection) -> None:
        """After a reconnect: resume accepted runs, send unaccepted messages again."""
        for message in self._mine():
            if not message.open:
                continue
            if message.run_id is None:
                message.superseded = True
                self.queue.insert(0, self._resend(message))
                continue
            message.resumes += 1
            resume = {"type": "resume", "run_id": message.run_id,
                      "after": message.last_piece(), "attempt": message.attempt}  # fmt: skip
            await ws.send(json.dumps(resume))

    def _resend(self, message: Message) -> Message:
        """The same request as a new message (a new id and a new note)."""
        attempt = int(message.mid.rsplit("r", 1)[1]) + 1
        mid = f"{message.mid.rsplit('r', 1)[0]}r{attempt}"
        return Message(mid, message.route, message.client, message_text(message.route, mid))

    def _give_up_late(self) -> None:
        """Stop waiting for answers older than the plan's answer timeout (they stay lost)."""
        limit = time.monotonic() - self.plan.answer_timeout_s
        for message in self._mine():
            if message.open and message.sent_at is not None and message.sent_at < limit:
                message.given_up = True
                log.warning("chaos.answer_timeout", mid=message.mid, run_id=message.run_id)

    async def _send_loop(self, ws: websockets.ClientConnection) -> None:
        while self.queue:
            while sum(m.open for m in self._mine()) >= self.plan.inflight:
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 1.0)
                self._give_up_late()
            message = self.queue.pop(0)
            self.ledger.messages[message.mid] = message
            message.sent_at = time.monotonic()
            frame = {
                "type": "chat",
                "text": message.text,
                "conversation_id": self.conversation,
                "id": message.mid,
            }
            await ws.send(json.dumps(frame))

    def _on_frame(self, frame: Frame) -> None:
        now = time.monotonic()
        run_id = frame.get("run_id")
        if frame.get("type") == "accepted":
            message = self.ledger.messages.get(str(frame.get("id")))
            if message is None or not isinstance(run_id, str):
                self.ledger.connection_errors.append(frame)
                return
            message.run_id, message.accepted_at = run_id, now
            self.by_run[run_id] = message
            for early in self.early.pop(run_id, []):
                message.record(early, now)
        elif isinstance(run_id, str):
            owner = self.by_run.get(run_id)
            if owner is None:
                self.early.setdefault(run_id, []).append(frame)
                return
            owner.record(frame, now)
        elif frame.get("type") not in ("pong",):
            self.ledger.connection_errors.append(frame)
        self.changed.set()


Chaos = Callable[[Ledger, asyncio.Event], Coroutine[Any, Any, None]]


async def run_load(
    url: str, plan: Plan, *, chaos: Chaos | None = None, settle_s: float = 60.0
) -> Ledger:
    """Send `plan` from its clients while `chaos` disrupts; wait up to `settle_s` after the
    last message was sent for the answers."""
    ledger = Ledger()
    planned = plan.messages()
    clients = [
        Client(i, url, plan.user(i), [m for m in planned if m.client == i], ledger, plan)
        for i in range(plan.clients)
    ]
    far = time.monotonic() + 3600
    tasks = [asyncio.create_task(c.run(far)) for c in clients]
    stop = asyncio.Event()
    disruptor = asyncio.create_task(chaos(ledger, stop)) if chaos else None
    try:
        sending_until = time.monotonic() + plan.max_sending_s
        while any(c.queue for c in clients) and not all(t.done() for t in tasks):
            await asyncio.wait(tasks, timeout=0.2)
            if ledger.enough:
                for client in clients:
                    client.queue.clear()
            elif time.monotonic() > sending_until:
                ledger.unsent = sum(len(c.queue) for c in clients)
                for client in clients:
                    client.queue.clear()
        stop.set()
        if disruptor is not None:
            await disruptor
        for client in clients:
            client.changed.set()
        await asyncio.wait(tasks, timeout=settle_s)
    finally:
        stop.set()
        for task in [*tasks, *([disruptor] if disruptor else [])]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    log.info("chaos.load_done", sent=len(ledger.messages), open=len(ledger.open_mids()))
    return ledger


def pick_victims(
    rng: random.Random, names: Sequence[str], first: Sequence[str] = ()
) -> Callable[[Callable[[str], bool]], str]:
    """A chooser of victims: `first` in order, then rounds of every name in random order.
    It is given which names may be chosen now; "" when none may."""
    bag: list[str] = list(reversed(first))

    def choose(allowed: Callable[[str], bool]) -> str:
        if not bag:
            bag.extend(rng.sample(list(names), len(names)))
        for index in range(len(bag) - 1, -1, -1):
            if allowed(bag[index]):
                return bag.pop(index)
        return ""

    return choose
