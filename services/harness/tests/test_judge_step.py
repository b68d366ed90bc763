"""The evaluator's model judge as a step of the run (F39, seed 004): a model's answer that
passes the offline rules is sent to the router's judge; a failing verdict regenerates like a
failed rule; a judge that cannot judge, or whose step fails for good, passes the answer.
Routes and profiles the settings skip get neither the rules nor the judge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import (
    AnswerEvaluated,
    AnswerEvaluateRequested,
    AnswerGenerated,
    ChatRequested,
    Event,
    Intent,
    MemoryContext,
    MemoryContextReady,
    Route,
    RouteDecided,
    RunCompleted,
    StepCommand,
    StepFailed,
    TurnCompleted,
    new_id,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings
from weir_harness.steps import EVALUATE, GENERATE, build_command
from weir_harness.transitions import Decision, decide
from weir_harness.verdict import judge

STORES = ("memory",)  # and PostgreSQL for the tests marked `stores` (conftest)
ON = HarnessSettings(database_url="postgresql://unused")
PREFERENCES = "dislikes coffee"


def _run(text: str = "What should I drink?", profile: str | None = None) -> Run:
    request = ChatRequested(
        run_id="r1", conversation_id="c", text=text, reply_to="r", profile=profile
    )
    run = Run(
        run_id="r1", conversation_id="c", user_id=None, status=RunStatus.RUNNING, request=request
    )
    run.state.context = MemoryContext(preferences=PREFERENCES)
    run.state.route = Route.PLAIN_CHAT
    return run


def _answer(text: str, *, offline: bool = False) -> AnswerGenerated:
    return AnswerGenerated(request_id="q", text=text, model="pro-m", offline=offline)


def _verdict(passed: bool, reason: str = "", note: str | None = None) -> AnswerEvaluated:
    return AnswerEvaluated(request_id="e", passed=passed, reason=reason, note=note, model="f")


def _decide(run: Run, result: AnswerGenerated | AnswerEvaluated) -> Decision:
    return decide(run, result, Capabilities(), ON)


# --- the transitions ---------------------------------------------------------------------------


@pytest.mark.unit
def test_an_answer_passing_the_rules_is_judged_then_delivered() -> None:
    run = _run()
    decision = _decide(run, _answer("Try a green tea."))
    assert (decision.next_step, decision.replies, decision.notes) == (EVALUATE, [], [])
    assert run.state.candidate is not None  # not delivered before the verdict
    assert run.status is RunStatus.RUNNING
    command = build_command(run, EVALUATE, 1, Capabilities(), ON)
    assert isinstance(command, AnswerEvaluateRequested)
    assert (command.query, command.answer) == ("What should I drink?", "Try a green tea.")
    assert command.context.preferences == PREFERENCES

    decision = _decide(run, _verdict(True))
    assert decision.next_step == "turn.completed"
    [reply] = decision.replies
    assert isinstance(reply, RunCompleted)
    assert reply.text == "Try a green tea."
    assert (run.state.answer, run.state.model) == ("Try a green tea.", "pro-m")
    assert not run.state.candidate
    assert run.state.evaluator_failures == []
    assert judge(run, [])["verdict"] == "completed"


@pytest.mark.unit
def test_a_failing_verdict_regenerates_with_its_reason() -> None:
    run = _run()
    _decide(run, _answer("Water."))
    reason = "it does not say why water"
    decision = _decide(run, _verdict(False, reason))
    assert decision.next_step == GENERATE
    assert decision.notes == [("evaluator.failed", {"reason": reason, "check": 1, "by": "judge"})]
    assert run.state.revision_note == reason
    generate = build_command(run, GENERATE, 1, Capabilities(), ON)
    assert getattr(generate, "revision_note", None) == reason

    assert _decide(run, _answer("Water: you need it.")).next_step == EVALUATE
    decision = _decide(run, _verdict(True))
    assert decision.next_step == "turn.completed"
    assert run.state.answer == "Water: you need it."
    assert judge(run, [])["verdict"] == "completed"


@pytest.mark.unit
def test_the_last_failing_verdict_is_delivered_and_marked() -> None:
    run = _run()
    for check in range(1, 5):
        assert _decide(run, _answer(f"answer {check}")).next_step == EVALUATE
        decision = _decide(run, _verdict(False, f"wrong {check}"))
    assert decision.next_step == "turn.completed"
    assert decision.notes[0][1] == {"reason": "wrong 4", "check": 4, "by": "judge"}
    assert run.state.answer == "answer 4"
    assert run.state.evaluator_failed
    verdict = judge(run, [])
    assert verdict["verdict"] == "partial"
    assert any("wrong 4" in e for e in verdict["evidence"]), verdict


@pytest.mark.unit
def test_a_verdict_without_a_judgement_passes_with_a_note() -> None:
    run = _run()
    _decide(run, _answer("Try a green tea."))
    decision = _decide(run, _verdict(True, note="the judge's reply was not a verdict"))
    assert decision.next_step == "turn.completed"
    assert decision.notes == [
        ("evaluator.unjudged", {"note": "the judge's reply was not a verdict"})
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("settings", "offline"),
    [
        (ON, True),  # the offline responder's router has no model to judge with
        (HarnessSettings(database_url="postgresql://unused", evaluator_judge=False), False),
        (HarnessSettings(database_url="postgresql://unused", evaluator_enabled=False), False),
        (HarnessSettings(database_url="postgresql://unused", evaluator_skip_routes=["plain_chat"]),
         False),
    ],
)  # fmt: skip
def test_no_judge_where_it_is_off_or_has_no_model(settings: HarnessSettings, offline: bool) -> None:
    run = _run()
    decision = decide(run, _answer("Try a green tea.", offline=offline), Capabilities(), settings)
    assert decision.next_step == "turn.completed"
    assert run.state.candidate is None


@pytest.mark.unit
def test_a_skipped_profile_gets_neither_the_rules_nor_the_judge() -> None:
    skip = HarnessSettings(
        database_url="postgresql://unused", evaluator_skip_profiles=["weir-chat"]
    )
    run = _run(profile="weir-chat")
    decision = decide(run, _answer("Have a coffee."), Capabilities(), skip)
    assert decision.next_step == "turn.completed"
    assert (decision.notes, run.state.evaluator_failures) == ([], [])

    checked = _run(profile="weir-agent")
    assert decide(checked, _answer("Have a coffee."), Capabilities(), skip).next_step == GENERATE
    judged = _run(profile="weir-agent")
    assert decide(judged, _answer("Try a green tea."), Capabilities(), skip).next_step == EVALUATE


# --- the step in the run service -----------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def judging(repo: RunStore, settings: HarnessSettings, clock: _Clock) -> RunService:
    """The run service with the judge on (the shared fixture turns it off)."""
    return RunService(repo, settings.model_copy(update={"evaluator_judge": True}), clock=clock)


def _command(out: list[Outgoing]) -> StepCommand:
    [command] = [item.event for item in out if isinstance(item.event, StepCommand)]
    return command


def _of_type(out: list[Outgoing], kind: type[Event]) -> list[Any]:
    return [item.event for item in out if isinstance(item.event, kind)]


async def _to_evaluate(service: RunService) -> AnswerEvaluateRequested:
    """A plain-chat run walked to its judge's step."""
    request = ChatRequested(text="What should I drink?", reply_to="weir.reply.judge",
                            run_id=new_id(), conversation_id=new_id(), user_id="u1")  # fmt: skip
    memory = _command(await service.on_chat(request, None))
    context = MemoryContext(preferences=PREFERENCES)
    ready = MemoryContextReady(context=context, request_id=memory.event_id, **memory.envelope())
    route = _command(await service.on_result(ready))
    decided = RouteDecided(intent=Intent.CHAT, route=Route.PLAIN_CHAT, request_id=route.event_id,
                           **route.envelope())  # fmt: skip
    generate = _command(await service.on_result(decided))
    answer = AnswerGenerated(text="Try a green tea.", model="pro-m",
                             request_id=generate.event_id, **generate.envelope())  # fmt: skip
    evaluate = _command(await service.on_result(answer))
    assert isinstance(evaluate, AnswerEvaluateRequested)
    return evaluate


def _failure(command: StepCommand, *, transient: bool) -> StepFailed:
    return StepFailed(step=EVALUATE, reason="judge down", transient=transient,
                      request_id=command.event_id, **command.envelope())  # fmt: skip


@pytest.mark.stores("memory", "postgres")
async def test_a_judge_step_failing_for_good_delivers_the_answer(
    judging: RunService, repo: RunStore, clock: _Clock, settings: HarnessSettings
) -> None:
    evaluate = await _to_evaluate(judging)
    assert await judging.on_result(_failure(evaluate, transient=True)) == []  # retried
    clock.now += timedelta(seconds=settings.backoff_base_s)
    again = _command(await judging.sweep())
    assert (type(again), again.attempt) == (AnswerEvaluateRequested, 2)

    out = await judging.on_result(_failure(again, transient=False))
    [completed] = _of_type(out, RunCompleted)
    assert completed.text == "Try a green tea."
    assert isinstance(_command(out), TurnCompleted)
    steps = await repo.steps(evaluate.run_id or "")
    [note] = [s for s in steps if s["kind"] == "evaluator.unjudged"]
    assert note["payload"]["note"] == "the judge failed after 2 attempt(s): judge down"


@pytest.mark.stores("memory", "postgres")
async def test_the_judge_step_has_its_own_deadline(
    judging: RunService, repo: RunStore, clock: _Clock, settings: HarnessSettings
) -> None:
    evaluate = await _to_evaluate(judging)
    async with repo.transaction() as tx:
        run = await tx.get(evaluate.run_id or "")
    assert run is not None
    assert run.deadline is not None
    assert run.deadline == clock.now + timedelta(seconds=settings.evaluator_timeout_s)
    verdict = AnswerEvaluated(passed=True, request_id=evaluate.event_id, **evaluate.envelope())
    [completed] = _of_type(await judging.on_result(verdict), RunCompleted)
    assert completed.text == "Try a green tea."
