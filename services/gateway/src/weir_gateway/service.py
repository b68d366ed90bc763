"""Assembling streamed answers: replies from the bus, reordered per run, to the right socket."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from weir_common.events import (
    AnswerDelta,
    ConversationTitled,
    IngestCompleted,
    IngestFailed,
    Reply,
    RunCompleted,
    RunFailed,
    RunStep,
    ToolConfirmationRequested,
    utcnow,
)
from weir_gateway.errors import public_reason

Frame = dict[str, Any]


def internal_conversation_id(user_id: str, conversation_id: str) -> str:
    """The bus-wide id of a user's conversation: two users never share one by accident."""
    return uuid5(NAMESPACE_URL, f"weir:{user_id}:{conversation_id}").hex


@dataclass
class RunStream:
    """Orders and dedupes the deltas of one run, across generation attempts."""

    run_id: str
    conversation_id: str
    client_message_id: str | None
    attempt: int = 1
    next_seq: int = 0
    pending: dict[int, str] = field(default_factory=dict)
    steps_seen: set[str] = field(default_factory=set)  # event ids: a resumed run hears twice
    started_at: float = 0.0
    heard_at: float = 0.0  # the last reply, or the last look at the run's record
    user_id: str = ""  # whose run (for the in-flight quota)

    def ids(self) -> Frame:
        """The client's own ids of this run, repeated on its final frame."""
        return {"conversation_id": self.conversation_id, "id": self.client_message_id}

    def accept(self, delta: AnswerDelta) -> list[Frame]:
        """Frames to send for `delta`: none, one, or several once a gap is filled; a piece
        already sent (a resumed run hears its replies from its reply topic and live) none."""
        frames: list[Frame] = []
        if delta.attempt < self.attempt:
            return frames
        if delta.attempt > self.attempt:
            self.attempt, self.next_seq, self.pending = delta.attempt, 0, {}
            frames.append({"type": "reset", "run_id": self.run_id, "attempt": delta.attempt})
        if delta.seq >= self.next_seq:
            self.pending[delta.seq] = delta.text
        while self.next_seq in self.pending:
            text = self.pending.pop(self.next_seq)
            frames.append(
                {"type": "delta", "run_id": self.run_id, "index": self.next_seq, "text": text}
            )
            self.next_seq += 1
        return frames


def _confirm(stream: RunStream, reply: ToolConfirmationRequested) -> list[Frame]:
    """The `confirm` frame of a tool call waiting for the user (once per event)."""
    if reply.event_id in stream.steps_seen:
        return []
    stream.steps_seen.add(reply.event_id)
    # the user's time to answer does not count against the run's deadline
    wait_s = max((reply.expires_at - utcnow()).total_seconds(), 0.0)
    stream.started_at = max(stream.started_at, time.monotonic() + wait_s)
    return [{"type": "confirm", "run_id": stream.run_id, "call_id": reply.call_id,
             "tool": reply.tool, "arguments": reply.arguments, "server": reply.server,
             "expires_at": reply.expires_at.isoformat(), "reason": reply.reason,
             **stream.ids()}]  # fmt: skip


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
            frame = {"type": "title", "conversation_id": reply.client_conversation_id,
                     "title": reply.title}  # fmt: skip
            for outbox in self._sockets.get(reply.user_id or "", ()):
                outbox.put_nowait(dict(frame))
            return
        route = self._routes.get(reply.run_id or "")
        if route is None:
            return
        stream, outbox = route
        stream.heard_at = time.monotonic()
        if isinstance(reply, ToolConfirmationRequested):
            frames = _confirm(stream, reply)
        else:
            frames = self._frames(stream, reply)
        for frame in frames:
            outbox.put_nowait(frame)

    def _frames(self, stream: RunStream, reply: Reply) -> list[Frame]:
        ids = stream.ids()
        if isinstance(reply, AnswerDelta):
            return stream.accept(reply)
        if isinstance(reply, RunStep):
            if reply.event_id in stream.steps_seen:
                return []
            stream.steps_seen.add(reply.event_id)
            step: dict[str, object] = {
                "kind": reply.kind,
                "content": reply.content,
                "tool": reply.tool,
            }
            if reply.arguments is not None:
                step["arguments"] = reply.arguments
            return [{"type": "step", "run_id": stream.run_id, **step}]
        if isinstance(reply, RunCompleted):
            del self._routes[stream.run_id]
            return [
                {
                    "type": "done",
                    "run_id": stream.run_id,
                    "text": reply.text,
                    "intent": reply.intent,
                    "route": reply.route,
                    "offline": reply.offline,
                    **ids,
                }
            ]
        if isinstance(reply, RunFailed):
            del self._routes[stream.run_id]
            return [
                {
                    "type": "error",
                    "run_id": stream.run_id,
                    "code": reply.code,
                    "message": public_reason(reply.code, reply.reason),
                    **ids,
                }
            ]
        return []
