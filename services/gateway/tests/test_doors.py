"""One stream, many doors: every kind of frame is carried, or deliberately dropped, by each."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from weir_gateway.doors import openai_frames, sse, websocket
from weir_gateway.stream import FRAME_KINDS, Frame

pytestmark = pytest.mark.unit

CITED = [{"document_id": "d1", "source": "falcon.pdf", "locator": "p. 3", "score": 0.42}]
SAMPLES: dict[str, Frame] = {
    "delta": {"type": "delta", "run_id": "r1", "index": 0, "text": "The code "},
    "reset": {"type": "reset", "run_id": "r1", "attempt": 2},
    "step.thought": {"type": "step", "run_id": "r1", "kind": "thought", "tool": None,
                     "content": "I should read the file"},
    "step.action": {"type": "step", "run_id": "r1", "kind": "action", "tool": "read_text_file",
                    "content": "read_text_file(...)", "arguments": {"path": "/d/falcon.txt"}},
    "step.observation": {"type": "step", "run_id": "r1", "kind": "observation",
                         "tool": "read_text_file", "content": "launch code 7"},
    "step.retrieval": {"type": "step", "run_id": "r1", "kind": "retrieval", "tool": None,
                       "content": "falcon.pdf", "sources": CITED},
    "confirm": {"type": "confirm", "run_id": "r1", "call_id": "c1", "tool": "append_note",
                "arguments": {"text": "hi"}, "server": "notes", "reason": "side_effects",
                "expires_at": "2026-12-04T22:00:00+00:00", "conversation_id": "c", "id": None},
    "title": {"type": "title", "conversation_id": "c", "title": "Project Falcon"},
    "done": {"type": "done", "run_id": "r1", "text": "The code is 7.", "intent": "knowledge",
             "route": "knowledge", "offline": True, "conversation_id": "c", "id": None},
    "error": {"type": "error", "run_id": "r1", "code": "deadline", "message": "no answer",
              "conversation_id": "c", "id": None},
}  # fmt: skip


def _openai() -> Callable[[Frame], Any]:
    return openai_frames.Completion("r1", "c", "weir-agent").encode


DOORS: dict[str, tuple[Callable[[], Callable[[Frame], Any]], dict[str, str]]] = {
    "websocket": (lambda: lambda frame: websocket.encode(frame, 0), websocket.DROPPED),
    "sse": (lambda: sse.encode, sse.DROPPED),
    "openai": (_openai, openai_frames.DROPPED),
}


def test_the_samples_cover_every_frame_kind() -> None:
    assert set(SAMPLES) == set(FRAME_KINDS)


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize("kind", FRAME_KINDS)
def test_each_door_carries_each_kind_or_says_why_not(door: str, kind: str) -> None:
    make, dropped = DOORS[door]
    encoded = make()(SAMPLES[kind])
    if kind in dropped:
        assert encoded is None, f"{door} says it drops {kind} but sends it"
        assert len(dropped[kind]) > 10, "a dropped kind says why"
    else:
        assert encoded is not None, f"{door} neither carries nor drops {kind}"
        json.dumps(encoded)  # every door's output is JSON (or SSE text)


@pytest.mark.parametrize("door", list(DOORS))
def test_a_door_drops_only_kinds_that_exist(door: str) -> None:
    assert set(DOORS[door][1]) <= set(FRAME_KINDS)


def test_what_each_door_says_of_the_same_answer() -> None:
    assert websocket.encode(SAMPLES["delta"], 4) == {**SAMPLES["delta"], "seq": 4}
    assert sse.encode(SAMPLES["delta"]) == 'event: text\ndata: {"content": "The code "}\n\n'
    chunk = _openai()(SAMPLES["delta"])
    assert chunk["choices"][0]["delta"] == {"content": "The code "}
    assert chunk["object"] == "chat.completion.chunk"
    assert chunk["id"] == "chatcmpl-r1"
