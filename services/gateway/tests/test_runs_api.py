"""A run record of the harness, as its owner sees it."""

from __future__ import annotations

from typing import Any

import pytest

from weir_gateway.runs_api import answer_of, record_answer

pytestmark = pytest.mark.unit


def _run(status: str, **state: Any) -> dict[str, Any]:
    return {
        "run_id": "r1",
        "user_id": "ada",
        "status": status,
        "state": state,
        "request": {"client_message_id": "m1"},
        "error": "answer.generate.requested failed after 3 attempt(s): model down",
    }


def test_an_answered_run_is_complete_with_its_whole_answer() -> None:
    for status in ("finishing", "completed"):
        answer = answer_of(_run(status, answer="Hello Ada", route="plain_chat", offline=True))
        assert (answer.status, answer.text, answer.route, answer.offline) == (
            "completed",
            "Hello Ada",
            "plain_chat",
            True,
        )
        frame = answer.final_frame({"id": "m1", "conversation_id": "c"})
        assert frame is not None
        assert (frame["type"], frame["text"], frame["id"]) == ("done", "Hello Ada", "m1")


def test_a_running_run_has_no_final_frame_and_no_text() -> None:
    for status in ("queued", "running"):
        answer = answer_of(_run(status, answer="half"))
        assert (answer.status, answer.text) == ("running", None)
        assert answer.final_frame({}) is None


def test_a_failed_run_says_why() -> None:
    answer = answer_of(_run("failed"))
    frame = answer.final_frame({"id": "m1"})
    assert frame is not None
    assert (frame["type"], frame["code"]) == ("error", "step_failed")
    assert frame["message"] == (
        "could not generate the answer (tried 3 times); the run failed — try again later"
    )
    assert answer.client_message_id == "m1"


def test_a_whole_record_adds_ids_times_diagnosis_verdict_and_timeline() -> None:
    event = {"seq": 1, "at": "2026-01-01T00:00:00+00:00", "step": "route.requested",
             "kind": "result", "attempt": 1, "event": "route.decided",
             "detail": {"route": "plain_chat"}, "duration_ms": 12.5}  # fmt: skip
    found = record_answer(
        {
            "run": {**_run("failed"), "conversation_id": "c1"},
            "created_at": "2026-01-01T00:00:00+00:00",
            "ended_at": "2026-01-01T00:00:01+00:00",
            "diagnosis": {"level": "error", "hints": ["answer.generate.requested failed"]},
            "verdict": {"verdict": "failed", "evidence": ["no answer was given"]},
            "timeline": [event],
        }
    )
    assert (found.user_id, found.conversation_id) == ("ada", "c1")
    assert found.ended_at is not None
    assert found.diagnosis is not None
    assert found.diagnosis.level == "error"
    assert found.verdict is not None
    assert found.verdict.verdict == "failed"
    assert found.timeline is not None
    assert found.timeline[0].duration_ms == 12.5
    assert found.error is not None
    assert "model down" not in found.model_dump_json()  # the raw reason stays with ops


def test_a_running_record_has_no_verdict_yet() -> None:
    found = record_answer({"run": _run("running"), "diagnosis": None, "verdict": None})
    assert (found.status, found.diagnosis, found.verdict, found.timeline) == (
        "running",
        None,
        None,
        [],
    )
