"""Confirmation frames at the edge: the `confirm` frame of a waiting call, the client's
answer frame, the SSE event, and the card shown again on resume."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from pydantic import ValidationError

from weir_common.events import ToolConfirmationRequested, utcnow
from weir_gateway.confirm_api import confirm_frame
from weir_gateway.doors.sse import encode as to_sse
from weir_gateway.frames import CLIENT_FRAME, ConfirmFrame
from weir_gateway.runs_api import answer_of
from weir_gateway.service import ReplyHub
from weir_gateway.stream import RunStream

pytestmark = pytest.mark.unit


def _asked(expires_in_s: float = 600) -> ToolConfirmationRequested:
    return ToolConfirmationRequested(
        call_id="call-1", tool="write_file", arguments={"path": "a.txt", "content": "hi"},
        server="fs", expires_at=utcnow() + timedelta(seconds=expires_in_s), run_id="r1",
    )  # fmt: skip


def test_a_waiting_call_reaches_the_socket_once_as_a_confirm_frame() -> None:
    hub = ReplyHub()
    outbox: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    stream = RunStream("r1", "c1", "m1")
    hub.expect(stream, outbox)
    asked = _asked()
    hub.dispatch(asked)
    hub.dispatch(asked)  # heard twice (a resumed run reads its replies back): shown once
    frame = outbox.get_nowait()
    assert outbox.empty()
    assert frame == {"type": "confirm", "run_id": "r1", "call_id": "call-1",
                     "tool": "write_file", "arguments": {"path": "a.txt", "content": "hi"},
                     "server": "fs", "expires_at": asked.expires_at.isoformat(),
                     "reason": "side_effects", "conversation_id": "c1", "id": "m1"}  # fmt: skip
    # the user's time to answer is not the run's deadline
    assert hub.expire(deadline_s=60, now=time.monotonic() + 300) == []
    assert hub.following("r1")
    sse = to_sse(frame)
    assert sse is not None
    assert sse.startswith("event: confirm\n")
    assert '"call_id": "call-1"' in sse
    assert '"arguments": {"path": "a.txt"' in sse


def test_the_answer_frame() -> None:
    frame = CLIENT_FRAME.validate_python(
        {"type": "confirm", "run_id": "r1", "call_id": "call-1", "approve": True}
    )
    assert isinstance(frame, ConfirmFrame)
    assert frame.remember == "once"
    for bad in (
        {"type": "confirm", "run_id": "r1", "call_id": "call-1"},  # no answer
        {"type": "confirm", "run_id": "r1", "call_id": "c", "approve": True, "remember": "x"},
        {"type": "confirm", "run_id": "r 1", "call_id": "c", "approve": False},
        {"type": "confirm", "run_id": "r1", "call_id": "c", "approve": True, "user_id": "eve"},
    ):
        with pytest.raises(ValidationError):
            CLIENT_FRAME.validate_python(bad)


def test_a_waiting_run_record_shows_its_card_again() -> None:
    run = {
        "run_id": "r1",
        "user_id": "ada",
        "status": "awaiting_confirmation",
        "request": {},
        "state": {"awaiting": {"call_id": "call-1", "server": "fs", "reason": "policy",
                               "expires_at": "2030-01-01T12:10:00Z",
                               "call": {"tool": "write_file", "arguments": {"path": "a"}}}},
    }  # fmt: skip
    assert answer_of(run).status == "awaiting_confirmation"
    assert answer_of(run).final_frame({}) is None
    assert confirm_frame(run) == {"type": "confirm", "run_id": "r1", "call_id": "call-1",
                                  "tool": "write_file", "arguments": {"path": "a"},
                                  "server": "fs", "expires_at": "2030-01-01T12:10:00Z",
                                  "reason": "policy"}  # fmt: skip
    assert confirm_frame({**run, "status": "running"}) is None
