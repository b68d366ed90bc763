"""The doors side by side: for each, an encoder of one run's frames and what it leaves out.

`coverage()` says, for every door and every kind of frame, whether the door carries it or
drops it on purpose (and why); a kind that is neither is a gap. The table test and
`bench/contract.py` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from weir_common.events import (
    AnswerDelta,
    Citation,
    ConversationTitled,
    Reply,
    RunCompleted,
    RunFailed,
    RunStep,
    ToolConfirmationRequested,
    utcnow,
)
from weir_common.events.base import Envelope
from weir_gateway.doors import openai_frames, sse, websocket
from weir_gateway.stream import FRAME_KINDS, Frame, RunStream, frames_of, kind_of, title_frame

Encoder = Callable[[Frame], Any]


@dataclass(frozen=True, slots=True)
class Door:
    """One way out for a run's frames."""

    name: str
    encoder: Callable[[], Encoder]
    """A fresh encoder, for one run (the OpenAI door keeps the run's steps)."""
    dropped: dict[str, str]
    """Kinds it leaves out on purpose, with why."""


DOORS = (
    Door("websocket", lambda: lambda frame: websocket.encode(frame, 0), websocket.DROPPED),
    Door("sse", lambda: sse.encode, sse.DROPPED),
    Door("openai", lambda: openai_frames.Completion("run", "conversation", "weir").encode,
         openai_frames.DROPPED),
)  # fmt: skip


def coverage(samples: dict[str, Frame]) -> dict[str, dict[str, str]]:
    """`carried`, `dropped: <why>` or `gap` for each door and kind, from one sample frame
    of each kind (a door that sends a kind it says it drops is a gap too)."""
    table: dict[str, dict[str, str]] = {}
    for door in DOORS:
        row: dict[str, str] = {}
        for kind in FRAME_KINDS:
            sent = door.encoder()(samples[kind]) is not None
            if kind in door.dropped:
                row[kind] = "gap" if sent else f"dropped: {door.dropped[kind]}"
            else:
                row[kind] = "carried" if sent else "gap"
        table[door.name] = row
    return table


def sample_frames() -> dict[str, Frame]:
    """One frame of each kind, made by the stream itself from the replies of a sample run."""
    run: Envelope = {"run_id": "r1", "conversation_id": "c1", "user_id": "ann"}
    cited = Citation(document_id="d1", source="falcon.pdf", locator="p. 3", score=0.4)
    replies: list[Reply] = [
        AnswerDelta(seq=0, text="Let me look. ", **run),
        AnswerDelta(seq=0, attempt=2, text="The code ", **run),
        RunStep(kind="thought", content="I should read the file", **run),
        RunStep(kind="action", content="read_text_file(...)", tool="read_text_file",
                arguments={"path": "/d/falcon.txt"}, **run),
        RunStep(kind="observation", content="launch code 7", tool="read_text_file", **run),
        RunStep(kind="retrieval", content="falcon.pdf", sources=[cited], **run),
        ToolConfirmationRequested(call_id="c1", tool="append_note", arguments={"text": "7"},
                                  expires_at=utcnow() + timedelta(minutes=5), **run),
        RunCompleted(text="The code is 7.", route="rag", **run),
        RunFailed(code="step_failed", reason="answer.generate.requested failed after 3 "
                  "attempts", **run),
    ]  # fmt: skip
    frames: dict[str, Frame] = {}
    for reply in replies:  # a fresh stream each: a run ends once
        stream = RunStream("r1", "c1", "m1")
        for frame in frames_of(stream, reply):
            frames.setdefault(kind_of(frame), frame)
    title = ConversationTitled(client_conversation_id="c1", title="Project Falcon", user_id="ann")
    frames["title"] = title_frame(title)
    return frames
