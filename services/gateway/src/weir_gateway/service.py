"""Routing replies: from the bus, through each run's stream (`weir_gateway.stream`), to the
connection that asked."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from uuid import NAMESPACE_URL, uuid5

from faststream.kafka import KafkaBroker
from opentelemetry import trace

from weir_common.bus import publish
from weir_common.events import (
    ChatRequested,
    ConversationTitled,
    IngestCompleted,
    IngestFailed,
    Reply,
)
from weir_gateway.quotas import Quotas
from weir_gateway.settings import GatewaySettings
from weir_gateway.stream import FINAL_KINDS, Frame, RunStream, frames_of, title_frame

tracer = trace.get_tracer("weir.gateway")


def internal_conversation_id(user_id: str, conversation_id: str) -> str:
    """The bus-wide id of a user's conversation: two users never share one by accident."""
    return uuid5(NAMESPACE_URL, f"weir:{user_id}:{conversation_id}").hex


class ReplyHub:
    """Routes replies to the connection that asked, by run id."""

    def __init__(self) -> None:
        self._routes: dict[str, tuple[RunStream, asyncio.Queue[Frame]]] = {}
        self._ingests: dict[str, asyncio.Future[IngestCompleted | IngestFailed]] = {}
        self._sockets: dict[str, set[asyncio.Queue[Frame]]] = {}  # by user: their open sockets

    def connect(self, user_id: str, outbox: asyncio.Queue[Frame]) -> None:
        """Send `outbox` the user's conversation events (titles) until `forget`."""
        self._sockets.setdefault(user_id, set()).add(outbox)

    def expect_ingest(self, document_id: str) -> asyncio.Future[IngestCompleted | IngestFailed]:
        """A future resolved by the next ingestion outcome of `document_id`."""
        future = self._ingests.get(document_id)
        if future is None or future.done():
            future = asyncio.get_running_loop().create_future()
            self._ingests[document_id] = future
        return future

    def expect(self, stream: RunStream, outbox: asyncio.Queue[Frame]) -> None:
        """Send replies of `stream.run_id` to `outbox`."""
        stream.started_at = stream.started_at or time.monotonic()
        stream.heard_at = stream.heard_at or stream.started_at
        self._routes[stream.run_id] = (stream, outbox)

    def quiet(self, after_s: float, now: float | None = None) -> list[RunStream]:
        """Runs with no reply for `after_s`: their replies may have been lost (a crash of
        the gateway that consumed them, or of the harness before it published), so their
        record is worth a look. Marked as heard, so each is looked at once per `after_s`."""
        now = time.monotonic() if now is None else now
        found = [s for s, _ in self._routes.values() if now - s.heard_at >= after_s]
        for stream in found:
            stream.heard_at = now
        return found

    def open_runs(self, user_id: str) -> int:
        """How many runs of `user_id` this gateway is still waiting on."""
        return sum(s.user_id == user_id for s, _ in self._routes.values())

    def following(self, run_id: str) -> bool:
        """True while some connection waits for the run's replies."""
        return run_id in self._routes

    def finish(self, run_id: str, frame: Frame) -> bool:
        """End a run's route with `frame` (from its record); False if it already ended."""
        route = self._routes.pop(run_id, None)
        if route is None:
            return False
        route[1].put_nowait(frame)
        return True

    def expire(self, deadline_s: float, now: float | None = None) -> list[str]:
        """End every run that has waited longer than `deadline_s` with a `deadline` error."""
        now = time.monotonic() if now is None else now
        late = [r for r, (s, _) in self._routes.items() if now - s.started_at > deadline_s]
        for run_id in late:
            stream = self._routes[run_id][0]
            message = f"no answer within {deadline_s:g} s; the run may still finish: ask for it"
            self.finish(run_id, {"type": "error", "run_id": run_id, "code": "deadline",
                                 "message": message, **stream.ids()})  # fmt: skip
        return late

    def forget(self, outbox: asyncio.Queue[Frame]) -> None:
        """Drop every run of a closed connection."""
        for run_id in [r for r, (_, q) in self._routes.items() if q is outbox]:
            del self._routes[run_id]
        for user_id in [u for u, boxes in self._sockets.items() if outbox in boxes]:
            self._sockets[user_id].discard(outbox)
            if not self._sockets[user_id]:
                del self._sockets[user_id]

    def dispatch(self, reply: Reply) -> None:
        """Turn one reply event into frames on its connection (unknown runs are ignored)."""
        if isinstance(reply, IngestCompleted | IngestFailed):
            waiter = self._ingests.pop(reply.document_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(reply)
            return
        if isinstance(reply, ConversationTitled):  # after the run: to the user's sockets here
            frame = title_frame(reply)
            for outbox in self._sockets.get(reply.user_id or "", ()):
                outbox.put_nowait(dict(frame))
            return
        route = self._routes.get(reply.run_id or "")
        if route is None:
            return
        stream, outbox = route
        stream.heard_at = time.monotonic()
        for frame in frames_of(stream, reply):
            if frame["type"] in FINAL_KINDS:
                self._routes.pop(stream.run_id, None)
            outbox.put_nowait(frame)


@dataclass(frozen=True, slots=True)
class ChatStart:
    """One chat message to publish: who, what, and the stream its answer goes to."""

    user_id: str
    text: str
    stream: RunStream
    private: bool = False
    use_knowledge: bool = True
    use_tools: bool = True
    profile: str | None = None  # the OpenAI door's `model`


async def start_chat(
    chat: ChatStart,
    outbox: asyncio.Queue[Frame],
    *,
    hub: ReplyHub,
    broker: KafkaBroker,
    settings: GatewaySettings,
    quotas: Quotas,
) -> None:
    """Spend the user's quotas, route the frames of `chat.stream` to `outbox`, then publish
    the request (QuotaExceededError: nothing is published). Every door starts a turn here."""
    stream = chat.stream
    quotas.admit_run(chat.user_id, hub.open_runs(chat.user_id))
    await quotas.spend("chat", chat.user_id)
    stream.user_id = chat.user_id
    hub.expect(stream, outbox)
    with tracer.start_as_current_span("gateway.chat", attributes={"weir.run_id": stream.run_id}):
        await publish(
            broker,
            settings.topics,
            ChatRequested(
                text=chat.text,
                reply_to=settings.topics.reply(f"gateway.{settings.instance_id}"),
                private=chat.private,
                use_knowledge=chat.use_knowledge,
                use_tools=chat.use_tools,
                client_message_id=stream.client_message_id,
                run_id=stream.run_id,
                conversation_id=internal_conversation_id(chat.user_id, stream.conversation_id),
                client_conversation_id=stream.conversation_id,
                user_id=chat.user_id,
                profile=chat.profile,
            ),
        )
