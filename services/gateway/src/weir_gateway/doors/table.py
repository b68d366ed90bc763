"""The doors side by side: for each, an encoder of one run's frames and what it leaves out.

`coverage()` says, for every door and every kind of frame, whether the door carries it or
drops it on purpose (and why); a kind that is neither is a gap. The table test and
`bench/contract.py` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir_common.events import ConversationTitled
from weir_common.testing.sample_run import sample_replies
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
    frames: dict[str, Frame] = {}
    for reply in sample_replies():  # a fresh stream each: a run ends once
        if isinstance(reply, ConversationTitled):
            frames["title"] = title_frame(reply)
            continue
        for frame in frames_of(RunStream("r1", "c1", "m1"), reply):
            frames.setdefault(kind_of(frame), frame)
    return frames
