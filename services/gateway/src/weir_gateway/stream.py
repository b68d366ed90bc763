"""One stream, many doors: a run's reply events as a neutral sequence of frames.

`frames_of` is the only place where reply events become what a client sees. Every door —
the WebSocket (`weir_gateway.doors.websocket`), Server-Sent Events (`doors.sse`) and the
OpenAI-compatible API (`doors.openai_api`) — is a thin encoder of these frames, and
`FRAME_KINDS` lists every kind a door must carry or deliberately map.

Frames (dicts, JSON-ready; the WebSocket sends them as they are, with `seq` added):
`delta` (a piece of the answer: `index`, `text`), `reset` (a generation restarted: drop
the text so far; `attempt`), `step` (`kind`: thought, action, observation, retrieval; `tool`,
`arguments`, `content`, `sources`), `confirm` (a tool call waits for the user), `title`
(a conversation's automatic title, after its first `done`), `done` (the whole answer) and
`error` (the run ended without one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from weir_common.events import (
    AnswerDelta,
    ConversationTitled,
    Reply,
    RunCompleted,
    RunFailed,
    RunStep,
    ToolConfirmationRequested,
    utcnow,
)
from weir_gateway.errors import public_reason

Frame = dict[str, Any]

STEP_KINDS = ("thought", "action", "observation", "retrieval")
FRAME_KINDS = ("delta", "reset", *(f"step.{k}" for k in STEP_KINDS), "confirm", "title",
               "done", "error")  # fmt: skip
"""Every kind of frame a run's stream has (`step.<kind>` for each kind of step)."""

FINAL_KINDS = ("done", "error")


def kind_of(frame: Frame) -> str:
    """The frame's entry in `FRAME_KINDS` (`step.action`, `delta`…)."""
    kind = str(frame["type"])
    return f"step.{frame['kind']}" if kind == "step" else kind


@dataclass
class RunStream:
    """Orders and dedupes the replies of one run, across generation attempts."""

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

    def first_time(self, event_id: str) -> bool:
        """True the first time this event is seen (steps and asks are shown once)."""
        if event_id in self.steps_seen:
            return False
        self.steps_seen.add(event_id)
        return True


def frames_of(stream: RunStream, reply: Reply) -> list[Frame]:
    """The frames one reply of `stream`'s run adds to its stream, in order (none for a
    piece or step already sent, or a reply that shows nothing)."""
    if isinstance(reply, AnswerDelta):
        return stream.accept(reply)
    if isinstance(reply, RunStep):
        return [_step(stream, reply)] if stream.first_time(reply.event_id) else []
    if isinstance(reply, ToolConfirmationRequested):
        return [_confirm(stream, reply)] if stream.first_time(reply.event_id) else []
    if isinstance(reply, RunCompleted):
        return [{"type": "done", "run_id": stream.run_id, "text": reply.text,
                 "intent": reply.intent, "route": reply.route, "offline": reply.offline,
                 **stream.ids()}]  # fmt: skip
    if isinstance(reply, RunFailed):
        return [{"type": "error", "run_id": stream.run_id, "code": reply.code,
                 "message": public_reason(reply.code, reply.reason), **stream.ids()}]  # fmt: skip
    return []


def title_frame(reply: ConversationTitled) -> Frame:
    """The `title` frame of a conversation (sent to its user's open sockets)."""
    return {"type": "title", "conversation_id": reply.client_conversation_id,
            "title": reply.title}  # fmt: skip


def _step(stream: RunStream, reply: RunStep) -> Frame:
    frame: Frame = {"type": "step", "run_id": stream.run_id, "kind": reply.kind,
                    "content": reply.content, "tool": reply.tool}  # fmt: skip
    if reply.arguments is not None:
        frame["arguments"] = reply.arguments
    if reply.sources:
        frame["sources"] = [s.model_dump(mode="json") for s in reply.sources]
    return frame


def _confirm(stream: RunStream, reply: ToolConfirmationRequested) -> Frame:
    """The `confirm` frame of a tool call waiting for the user."""
    # the user's time to answer does not count against the run's deadline
    wait_s = max((reply.expires_at - utcnow()).total_seconds(), 0.0)
    stream.started_at = max(stream.started_at, time.monotonic() + wait_s)
    return {"type": "confirm", "run_id": stream.run_id, "call_id": reply.call_id,
            "tool": reply.tool, "arguments": reply.arguments, "server": reply.server,
            "expires_at": reply.expires_at.isoformat(), "reason": reply.reason,
            **stream.ids()}  # fmt: skip
