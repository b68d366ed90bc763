"""Tools the model asks for on the answer step (issue 13): sent as one batch through the
same budgets and gate as a planner's calls, observed in order, then the answer is asked again
with what they returned; and what the answer command tells the router it may still call."""

from __future__ import annotations

from typing import Any

import pytest

from weir_common.events import (
    AnswerGenerated,
    AnswerGenerateRequested,
    ProposedCall,
    ReactStepDecided,
    Route,
    RunStep,
    ToolCallResult,
    ToolsCallCompleted,
    ToolsCallRequested,
)
from weir_harness.models import RunState
from weir_harness.steps import CALL, GENERATE, build_command
from weir_harness.transitions import decide

from .test_transitions import ENVELOPE, SETTINGS, caps, make_run, routed

pytestmark = pytest.mark.unit


def asked(*calls: tuple[str, dict[str, Any]], text: str = "") -> AnswerGenerated:
    proposed = [ProposedCall(tool=t, arguments=a) for t, a in calls]
    return AnswerGenerated(text=text, tool_calls=proposed, prompt_tokens=7, request_id="g",
                           **ENVELOPE)  # fmt: skip


def results(*contents: tuple[str, str]) -> ToolsCallCompleted:
    done = [ToolCallResult(tool=t, content=c) for t, c in contents]
    return ToolsCallCompleted(results=done, request_id="c", **ENVELOPE)


def test_the_models_calls_go_out_as_one_batch_then_the_answer_is_asked_again() -> None:
    run = routed(Route.RAG, model_turns=1)
    tokyo, paris = {"timezone": "Asia/Tokyo"}, {"timezone": "Europe/Paris"}
    decision = decide(run, asked(("clock", tokyo), ("clock", paris)), caps("clock"), SETTINGS)
    assert decision.next_step == CALL
    assert [(c.tool, c.arguments) for c in run.state.pending_calls] == [
        ("clock", tokyo),
        ("clock", paris),
    ]
    assert run.state.calls_from == "answer"
    assert run.state.answer is None  # not answered yet
    assert run.state.prompt_tokens == 7
    actions = [r for r in decision.replies if isinstance(r, RunStep)]
    assert [(a.kind, a.arguments) for a in actions] == [("action", tokyo), ("action", paris)]
    command = build_command(run, CALL, 1, caps("clock"), SETTINGS)
    assert isinstance(command, ToolsCallRequested)
    assert [c.idempotency_key for c in command.calls] == ["run-1:0", "run-1:1"]
    after = decide(run, results(("clock", "09:00"), ("clock", "01:00")), caps("clock"), SETTINGS)
    assert after.next_step == GENERATE  # the model that asked answers now, no planning
    assert [(o.arguments, o.content) for o in run.state.observations] == [
        (tokyo, "09:00"),
        (paris, "01:00"),
    ]
    assert run.state.tool_calls == 2
    assert run.state.pending_calls == []


def test_the_budget_cuts_a_batch_and_says_so() -> None:
    run = routed(Route.REACT, model_turns=2, tool_calls=7)
    decision = decide(run, asked(("clock", {"a": 1}), ("clock", {"a": 2})), caps("clock"), SETTINGS)
    assert decision.next_step == CALL
    assert [c.arguments for c in run.state.pending_calls] == [{"a": 1}]
    [refused] = run.state.observations
    assert refused.is_error
    assert refused.content.startswith("Not run: the tool-call budget")
    assert decision.notes == [
        ("budget", {"rule": "tool_calls", "tool": "clock", "arguments": {"a": 2}})
    ]


def test_a_planner_may_ask_for_several_calls_at_once() -> None:
    run = routed(Route.REACT, model_turns=1)
    decided = ReactStepDecided(
        tool="clock",
        arguments={"tz": "UTC"},
        calls=[ProposedCall(tool="weather", arguments={"city": "Oslo"})],
        request_id="p",
        **ENVELOPE,
    )
    decision = decide(run, decided, caps("clock", "weather"), SETTINGS)
    assert decision.next_step == CALL
    assert [c.tool for c in run.state.pending_calls] == ["clock", "weather"]
    assert run.state.calls_from == "plan"


@pytest.mark.parametrize(
    ("tools", "model_turns", "tool_calls", "left"),
    [
        (("clock",), 1, 0, 8),  # tools connected, turns to spare
        ((), 1, 0, 0),  # nothing to offer
        (("clock",), 6, 0, 0),  # this answer is the last model turn: it must answer
        (("clock",), 2, 8, 0),  # the tool-call budget is used up
    ],
)
def test_the_answer_command_says_how_many_calls_the_model_may_ask_for(
    tools: tuple[str, ...], model_turns: int, tool_calls: int, left: int
) -> None:
    run = make_run(RunState(route=Route.RAG, model_turns=model_turns, tool_calls=tool_calls,
                            generations=3))  # fmt: skip
    command = build_command(run, GENERATE, 1, caps(*tools), SETTINGS)
    assert isinstance(command, AnswerGenerateRequested)
    assert command.tool_calls_left == left
    assert command.stream_attempt == 3  # the third generation of this run: clients reset
