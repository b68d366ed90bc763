"""The evaluator step in the run's state machine (F39, seed 004): a failed check regenerates
with its reason, at most `evaluator_max_regenerations` times; the last failure is delivered
and marked in the verdict."""

from __future__ import annotations

import pytest

from weir_common.events import AnswerGenerated, ChatRequested, MemoryContext, Route
from weir_harness.capabilities import Capabilities
from weir_harness.models import Run, RunStatus
from weir_harness.settings import HarnessSettings
from weir_harness.steps import EVALUATE, GENERATE
from weir_harness.transitions import decide
from weir_harness.verdict import judge

pytestmark = pytest.mark.unit


def _run(text: str, preferences: str, answer_route: Route = Route.PLAIN_CHAT) -> Run:
    request = ChatRequested(run_id="r1", conversation_id="c", text=text, reply_to="r")
    run = Run(
        run_id="r1", conversation_id="c", user_id=None, status=RunStatus.RUNNING, request=request
    )
    run.state.context = MemoryContext(preferences=preferences)
    run.state.route = answer_route
    return run


def _answer(text: str) -> AnswerGenerated:
    return AnswerGenerated(request_id="q1", text=text, model="m", offline=False)


def test_contradicting_answer_regenerates_then_is_delivered_and_marked() -> None:
    settings = HarnessSettings()
    run = _run("What should I drink this morning?", "dislikes coffee")
    for check in range(1, 4):
        decision = decide(run, _answer("Have a coffee."), Capabilities(), settings)
        assert decision.next_step == GENERATE
        assert run.state.revision_note is not None
        assert "coffee" in run.state.revision_note
        assert decision.notes[0][1]["check"] == check
    decision = decide(run, _answer("Have a coffee."), Capabilities(), settings)
    assert decision.next_step == "turn.completed"
    assert decision.notes[0] == (
        "evaluator.failed",
        {"reason": run.state.revision_note, "check": 4, "by": "rules"},
    )
    assert run.state.evaluator_failed
    assert len(run.state.evaluator_failures) == 4
    assert run.state.answer == "Have a coffee."
    verdict = judge(run, [])
    assert verdict["verdict"] == "partial"
    assert any("evaluator" in e for e in verdict["evidence"])


def test_skipped_route_and_good_answer_pass() -> None:
    run = _run("What should I drink?", "dislikes coffee", Route.REACT)
    skip = HarnessSettings(evaluator_skip_routes=["react"])
    assert decide(run, _answer("Coffee."), Capabilities(), skip).next_step != GENERATE
    run = _run("What should I drink?", "dislikes coffee")
    decision = decide(run, _answer("Green tea."), Capabilities(), HarnessSettings())
    assert decision.next_step == EVALUATE  # passed the rules: the model judge is next
    assert run.state.evaluator_failures == []


def test_offline_answers_are_not_regenerated() -> None:
    run = _run("Should I drink coffee?", "dislikes coffee")
    offline = AnswerGenerated(request_id="q1", text="You asked: coffee.", model="", offline=True)
    assert decide(run, offline, Capabilities(), HarnessSettings()).next_step == "turn.completed"
    assert not run.state.evaluator_failed
