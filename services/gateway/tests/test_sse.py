"""The SSE vocabulary of seed 002, frame by frame."""

from __future__ import annotations

import json

import pytest

from weir_gateway.doors.sse import encode as to_sse

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
    late = {"type": "error", "code": "deadline", "message": "late"}
    assert _event(to_sse(late)) == ("error", {"message": "late", "code": "deadline"})
    thought = {"type": "step", "kind": "thought", "tool": None, "content": "look it up"}
    assert _event(to_sse(thought)) == ("thought", {"content": "look it up"})
    cited = [{"document_id": "d1", "source": "a.pdf", "locator": "p. 2", "score": 0.5}]
    found = {"type": "step", "kind": "retrieval", "tool": None, "content": "a.pdf",
             "sources": cited}  # fmt: skip
    assert _event(to_sse(found)) == ("sources", {"sources": cited})


def test_frames_without_an_sse_event_are_skipped() -> None:
    assert to_sse({"type": "title", "conversation_id": "c", "title": "Falcon"}) is None
    assert to_sse({"type": "pong"}) is None
