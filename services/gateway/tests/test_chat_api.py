"""The SSE vocabulary of seed 002, frame by frame."""

from __future__ import annotations

import json

import pytest

from weir_gateway.chat_api import to_sse

pytestmark = pytest.mark.unit


def _event(text: str | None) -> tuple[str, dict[str, object]]:
    assert text is not None
    name, data = text.strip().split("\n")
    return name.removeprefix("event: "), json.loads(data.removeprefix("data: "))


def test_every_answer_frame_has_its_event() -> None:
    assert _event(to_sse({"type": "delta", "text": "Hi"})) == ("text", {"content": "Hi"})
    assert _event(to_sse({"type": "reset", "attempt": 2})) == ("reset", {"attempt": 2})
    call = {"type": "step", "kind": "action", "tool": "clock", "content": 'clock({"tz": "UTC"})',
            "arguments": {"tz": "UTC"}}  # fmt: skip
    assert _event(to_sse(call)) == ("tool_call", {"name": "clock", "args": {"tz": "UTC"}})
    seen = {"type": "step", "kind": "observation", "tool": "clock", "content": "12:00"}
    assert _event(to_sse(seen)) == ("tool_result", {"name": "clock", "result": "12:00"})
    done = {"type": "done", "route": "plain_chat", "offline": True, "text": "Hi"}
    assert _event(to_sse(done)) == ("done", {"route": "plain_chat", "offline": True})
    assert _event(to_sse({"type": "error", "message": "late"})) == ("error", {"message": "late"})


def test_frames_without_an_sse_event_are_skipped() -> None:
    assert to_sse({"type": "step", "kind": "retrieval", "tool": None, "content": "a.pdf"}) is None
    assert to_sse({"type": "pong"}) is None
