"""Unit tests of `transitions`: each result folded into a run, and the step that follows.

No database: a `Run` is built directly and fed the results a worker would send.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import (
    AnswerEvaluated,
    AnswerGenerated,
    ChatRequested,
    HarnessResult,
    Intent,
    MemoryContext,
    MemoryContextReady,
    Observation,
    Passage,
    RagRetrieveCompleted,
    ReactStepDecided,
    Route,
    RouteDecided,
    RunCompleted,
    RunStep,
    StepFailed,
    ToolCallResult,
    ToolInfo,
    ToolsCallCompleted,
    ToolsCatalogUpdated,
    TurnRecorded,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import PlannedCall, Run, RunState, RunStatus
from weir_harness.settings import HarnessSettings
from weir_harness.steps import CALL, EVALUATE, FIRST_STEP, GENERATE, LOOP_STEPS, PLAN, RETRIEVE
from weir_harness.transitions import (
    DONE,
    completed,
    counts_as_model_turn,
    decide,
    out_of_time,
    stop_for_time,
)

pytestmark = pytest.mark.unit

SETTINGS = HarnessSettings(
    database_url="postgresql://unused",
    agent_max_model_turns=6,
    agent_max_tool_calls=8,
    agent_max_repeated_tool_calls=1,
    agent_max_runtime_seconds=60.0,
)
REPLY_TO = "weir.reply.unit"
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
ENVELOPE: dict[str, Any] = {"run_id": "run-1", "conversation_id": "conv-1", "user_id": "user-1"}


def caps(*tools: str, rag: bool = False) -> Capabilities:
    found = Capabilities(rag=rag)
    found.update(ToolsCatalogUpdated(tools=[ToolInfo(name=t, server="builtin") for t in tools]))
    return found


def make_run(state: RunState | None = None, status: RunStatus = RunStatus.RUNNING) -> Run:
    request = ChatRequested(text="what is weir?", reply_to=REPLY_TO, **ENVELOPE)
    return Run(
        run_id="run-1",
        conversation_id="conv-1",
        user_id="user-1",
        status=status,
        request=request,
        state=state or RunState(),
    )


def routed(route: Route, **state: Any) -> Run:
    return make_run(RunState(route=route, intent=Intent.EXTERNAL_DATA, **state))


def planned(tool: str | None, thought: str = "", **arguments: Any) -> ReactStepDecided:
    return ReactStepDecided(
        thought=thought, tool=tool, arguments=arguments, request_id="cmd", **ENVELOPE
    )


def tool_done(tool: str, content: str, is_error: bool = False) -> ToolsCallCompleted:
    result = ToolCallResult(tool=tool, content=content, is_error=is_error)
    return ToolsCallCompleted(results=[result], request_id="cmd", **ENVELOPE)


def steps_of(replies: list[Any]) -> list[tuple[str, str, str | None]]:
    assert all(isinstance(r, RunStep) for r in replies)
    return [(r.kind, r.content, r.tool) for r in replies]


def passage(source: str, text: str = "text", chunk: str = "c") -> Passage:
    return Passage(chunk_id=f"{source}-{chunk}", document_id=source, source=source, text=text)


# --- the chains of the routes ------------------------------------------------------------------


def _walk(route: Route, capabilities: Capabilities) -> list[str]:
    """Feed one result per step (the planner stops at once) and record the step names."""
    run = make_run()
    results: dict[str, HarnessResult] = {
        FIRST_STEP: MemoryContextReady(context=MemoryContext(), request_id="c", **ENVELOPE),
        "route.requested": RouteDecided(
            intent=Intent.CHAT, route=route, request_id="c", **ENVELOPE
        ),
        RETRIEVE: RagRetrieveCompleted(passages=[passage("a.md")], request_id="c", **ENVELOPE),
        PLAN: planned(None, "nothing to look up"),
        GENERATE: AnswerGenerated(text="answer [1]", request_id="c", **ENVELOPE),
        EVALUATE: AnswerEvaluated(passed=True, request_id="c", **ENVELOPE),
        "turn.completed": TurnRecorded(request_id="c", **ENVELOPE),
    }
    chain: list[str] = [FIRST_STEP]
    while following := decide(run, results[chain[-1]], capabilities, SETTINGS).next_step:
        chain.append(following)
    return chain


@pytest.mark.parametrize(
    ("route", "capabilities", "middle"),
    [
        (Route.PLAIN_CHAT, caps("clock", rag=True), []),
        (Route.RAG, caps(rag=True), [RETRIEVE]),
        (Route.RAG, caps("clock"), []),
        (Route.SINGLE_TOOL, caps("clock"), [PLAN]),
        (Route.SINGLE_TOOL, caps(rag=True), []),
        (Route.REACT, caps("clock"), [PLAN]),
        (Route.REACT, caps(rag=True), []),
    ],
)
def test_route_chains(route: Route, capabilities: Capabilities, middle: list[str]) -> None:
    assert _walk(route, capabilities) == [
        FIRST_STEP,
        "route.requested",
        *middle,
        GENERATE,
        EVALUATE,  # a model's answer is judged (F39)
        "turn.completed",
    ]


# --- plain results -----------------------------------------------------------------------------


def test_memory_context_is_kept() -> None:
    run = make_run()
    context = MemoryContext(facts=["likes tea"])
    decision = decide(
        run, MemoryContextReady(context=context, request_id="c", **ENVELOPE), caps(), SETTINGS
    )
    assert (decision.next_step, decision.replies, decision.notes) == ("route.requested", [], [])
    assert run.state.context == context


def test_route_decision_is_kept() -> None:
    run = make_run()
    result = RouteDecided(
        intent=Intent.KNOWLEDGE, route=Route.RAG, rule="kb-words", request_id="c", **ENVELOPE
    )
    decision = decide(run, result, caps(rag=True), SETTINGS)
    assert decision.next_step == RETRIEVE
    assert (run.state.intent, run.state.route, run.state.rule) == (
        Intent.KNOWLEDGE,
        Route.RAG,
        "kb-words",
    )


def test_answer_completes_the_run_for_the_requester() -> None:
    run = routed(Route.REACT, prompt_tokens=100, completion_tokens=10)
    result = AnswerGenerated(
        text="it is noon",
        model="m",
        offline=True,
        prompt_tokens=20,
        completion_tokens=3,
        request_id="c",
        **ENVELOPE,
    )
    decision = decide(run, result, caps("clock"), SETTINGS)
    assert decision.next_step == "turn.completed"
    assert run.status is RunStatus.FINISHING
    assert (run.state.answer, run.state.model, run.state.offline) == ("it is noon", "m", True)
    assert (run.state.prompt_tokens, run.state.completion_tokens) == (120, 13)
    [reply] = decision.replies
    assert isinstance(reply, RunCompleted)
    assert (reply.text, reply.intent, reply.route, reply.offline) == (
        "it is noon",
        "external_data",
        "react",
        True,
    )
    assert reply.envelope() == ENVELOPE


def test_recorded_turn_ends_the_run() -> None:
    decision = decide(make_run(), TurnRecorded(request_id="c", **ENVELOPE), caps(), SETTINGS)
    assert decision.next_step is DONE
    assert decision.replies == []


def test_a_failure_is_not_a_transition() -> None:
    failed = StepFailed(step=GENERATE, reason="x", transient=True, request_id="c", **ENVELOPE)
    with pytest.raises(TypeError, match=r"step\.failed"):
        decide(make_run(), failed, caps(), SETTINGS)


def test_completed_without_a_route_or_answer() -> None:
    reply = completed(make_run())
    assert (reply.text, reply.intent, reply.route, reply.offline) == ("", None, None, False)


# --- retrieval ---------------------------------------------------------------------------------


def test_retrieved_passages_become_evidence_and_a_visible_step() -> None:
    run = routed(Route.RAG)
    passages = [passage("b.md", chunk="1"), passage("a.pdf"), passage("b.md", chunk="2")]
    decision = decide(
        run,
        RagRetrieveCompleted(passages=passages, request_id="c", **ENVELOPE),
        caps(rag=True),
        SETTINGS,
    )
    assert decision.next_step == GENERATE
    assert run.state.evidence == passages
    assert steps_of(decision.replies) == [("retrieval", "b.md, a.pdf", None)]
    assert decision.replies[0].envelope() == ENVELOPE


def test_nothing_retrieved_still_answers() -> None:
    run = routed(Route.RAG)
    decision = decide(
        run, RagRetrieveCompleted(request_id="c", **ENVELOPE), caps(rag=True), SETTINGS
    )
    assert decision.next_step == GENERATE
    assert run.state.evidence == []
    assert steps_of(decision.replies) == [("retrieval", "nothing found", None)]


# --- planning ----------------------------------------------------------------------------------


def test_planned_call_is_shown_and_sent() -> None:
    run = routed(Route.REACT, model_turns=1)
    decision = decide(run, planned("weather", "I need the weather", city="Oslo"), caps(), SETTINGS)
    assert decision.next_step == CALL
    assert steps_of(decision.replies) == [
        ("thought", "I need the weather", None),
        ("action", 'weather({"city": "Oslo"})', "weather"),
    ]
    assert run.state.pending_calls == [
        PlannedCall(tool="weather", arguments={"city": "Oslo"}, thought="I need the weather")
    ]
    assert run.state.call_counts == {'weather:{"city": "Oslo"}': 1}
    assert run.state.tool_calls == 0  # counted when it returns
    assert decision.notes == []


def test_plan_without_a_thought_shows_only_the_action() -> None:
    run = routed(Route.SINGLE_TOOL, model_turns=1)
    decision = decide(run, planned("clock"), caps("clock"), SETTINGS)
    assert decision.next_step == CALL
    assert steps_of(decision.replies) == [("action", "clock({})", "clock")]


@pytest.mark.parametrize("thought", ["", "I know enough"])
def test_plan_without_a_tool_answers_at_once(thought: str) -> None:
    run = routed(Route.REACT, model_turns=1)
    decision = decide(run, planned(None, thought), caps("clock"), SETTINGS)
    assert decision.next_step == GENERATE
    assert steps_of(decision.replies) == ([("thought", thought, None)] if thought else [])
    assert run.state.pending_calls == []
    assert run.state.stop_reason is None


def test_repeated_identical_call_is_refused() -> None:
    run = routed(Route.REACT, model_turns=2, tool_calls=1)
    run.state.call_counts['search:{"q": "weir"}'] = 1
    decision = decide(run, planned("search", "again", q="weir"), caps("search"), SETTINGS)
    assert decision.next_step == PLAN  # the planner is told, and tries something else
    assert run.state.pending_calls == []
    assert run.state.tool_calls == 1  # a refused call costs no tool call
    assert run.state.call_counts == {'search:{"q": "weir"}': 1}
    [refusal] = run.state.observations
    assert (refusal.tool, refusal.arguments, refusal.is_error) == ("search", {"q": "weir"}, True)
    assert refusal.content.startswith("Refused: search was already called with these arguments")
    assert steps_of(decision.replies) == [
        ("thought", "again", None),
        ("observation", refusal.content, "search"),
    ]
    assert decision.notes == [
        ("budget", {"rule": "repeated_call", "tool": "search", "arguments": {"q": "weir"}})
    ]


def test_same_tool_with_other_arguments_is_not_a_repeat() -> None:
    run = routed(Route.REACT, model_turns=2, tool_calls=1)
    run.state.call_counts['search:{"q": "weir"}'] = 1
    decision = decide(run, planned("search", q="weir harness"), caps("search"), SETTINGS)
    assert decision.next_step == CALL
    assert len(run.state.call_counts) == 2


def test_repeats_are_allowed_up_to_the_setting() -> None:
    settings = SETTINGS.model_copy(update={"agent_max_repeated_tool_calls": 2})
    run = routed(Route.REACT, model_turns=2, tool_calls=1)
    run.state.call_counts["clock:{}"] = 1
    assert decide(run, planned("clock"), caps("clock"), settings).next_step == CALL
    assert run.state.call_counts["clock:{}"] == 2
    run.state.pending_calls = []
    assert decide(run, planned("clock"), caps("clock"), settings).next_step == PLAN


def test_refusal_on_the_last_model_turn_answers() -> None:
    run = routed(Route.REACT, model_turns=5, tool_calls=1)
    run.state.call_counts["clock:{}"] = 1
    decision = decide(run, planned("clock"), caps("clock"), SETTINGS)
    assert decision.next_step == GENERATE
    assert run.state.stop_reason == "the model-turn budget (6) is used up"


# --- observations ------------------------------------------------------------------------------


def test_tool_result_becomes_an_observation() -> None:
    call = PlannedCall(tool="weather", arguments={"city": "Oslo"})
    run = routed(Route.REACT, model_turns=1, pending_calls=[call])
    decision = decide(run, tool_done("weather", "sunny, 21 °C"), caps("weather"), SETTINGS)
    assert decision.next_step == PLAN
    assert run.state.observations == [
        Observation(tool="weather", arguments={"city": "Oslo"}, content="sunny, 21 °C")
    ]
    assert run.state.tool_calls == 1
    assert run.state.pending_calls == []
    assert steps_of(decision.replies) == [("observation", "sunny, 21 °C", "weather")]
    assert decision.notes == []


def test_tool_error_is_an_observation_too() -> None:
    run = routed(Route.REACT, model_turns=1, pending_calls=[PlannedCall(tool="weather")])
    decision = decide(
        run, tool_done("weather", "city unknown", is_error=True), caps("weather"), SETTINGS
    )
    assert decision.next_step == PLAN
    assert run.state.observations[0].is_error is True
    assert run.state.tool_calls == 1


def test_single_tool_answers_after_its_call() -> None:
    run = routed(Route.SINGLE_TOOL, model_turns=1, pending_calls=[PlannedCall(tool="clock")])
    decision = decide(run, tool_done("clock", "12:00"), caps("clock"), SETTINGS)
    assert decision.next_step == GENERATE
    assert decision.notes == []
    assert run.state.stop_reason is None


def test_last_allowed_tool_call_answers_with_a_budget_note() -> None:
    run = routed(
        Route.REACT, model_turns=3, tool_calls=7, pending_calls=[PlannedCall(tool="clock")]
    )
    decision = decide(run, tool_done("clock", "12:00"), caps("clock"), SETTINGS)
    assert decision.next_step == GENERATE
    assert run.state.stop_reason == "the tool-call budget (8) is used up"
    assert decision.notes == [("budget", {"rule": "the tool-call budget (8) is used up"})]


def test_last_planning_turn_answers_with_a_budget_note() -> None:
    run = routed(
        Route.REACT, model_turns=5, tool_calls=4, pending_calls=[PlannedCall(tool="clock")]
    )
    decision = decide(run, tool_done("clock", "12:00"), caps("clock"), SETTINGS)
    assert decision.next_step == GENERATE
    assert run.state.stop_reason == "the model-turn budget (6) is used up"
    assert [kind for kind, _ in decision.notes] == ["budget"]


# --- the time budget ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "elapsed", "expected"),
    [
        (PLAN, 59.999, False),
        (PLAN, 60, True),
        (CALL, 60, True),
        (CALL, 3600, True),
        (GENERATE, 3600, False),  # the answer is never cut off
        ("turn.completed", 3600, False),
    ],
)
def test_out_of_time(step: str, elapsed: float, expected: bool) -> None:
    run = routed(Route.REACT, loop_started_at=T0)
    assert out_of_time(run, step, SETTINGS, T0 + timedelta(seconds=elapsed)) is expected


@pytest.mark.parametrize("step", LOOP_STEPS)
def test_no_time_budget_before_the_loop_starts(step: str) -> None:
    run = routed(Route.REACT)
    assert out_of_time(run, step, SETTINGS, T0 + timedelta(days=1)) is False


def test_stop_for_time_answers_with_what_the_tools_returned() -> None:
    seen = [
        Observation(tool="weather", content="sunny " * 100),
        Observation(tool="search", content="boom", is_error=True),
        Observation(tool="clock", content="12:00"),
    ]
    run = routed(Route.REACT, observations=seen, loop_started_at=T0, model_turns=3)
    decision = stop_for_time(run, SETTINGS)
    assert decision.next_step == "turn.completed"
    assert run.status is RunStatus.FINISHING
    assert run.state.stop_reason == "the time budget (60 s) is used up"
    assert decision.notes == [("budget", {"rule": "runtime", "seconds": 60.0})]
    [reply] = decision.replies
    assert isinstance(reply, RunCompleted)
    assert reply.text == run.state.answer
    lines = reply.text.splitlines()
    assert lines[0] == (
        "I had to stop: the time budget (60 s) is used up for this request,"
        " so this answer is incomplete."
    )
    assert lines[1] == "What the tools returned so far:"
    assert lines[2] == "- weather: " + ("sunny " * 100)[:300]
    assert lines[3:] == ["- clock: 12:00"]  # errors are left out
    assert run.state.model_turns == 3  # no model call


def test_stop_for_time_without_results_says_so() -> None:
    settings = SETTINGS.model_copy(update={"agent_max_runtime_seconds": 2.5})
    run = routed(Route.SINGLE_TOOL, loop_started_at=T0)
    reply = stop_for_time(run, settings).replies[0]
    assert isinstance(reply, RunCompleted)
    assert reply.text.splitlines() == [
        "I had to stop: the time budget (2.5 s) is used up for this request,"
        " so this answer is incomplete.",
        "No tool returned a result in time.",
    ]


def test_planning_and_answering_are_the_model_turns() -> None:
    every = [FIRST_STEP, "route.requested", RETRIEVE, PLAN, CALL, GENERATE, "turn.completed"]
    assert [step for step in every if counts_as_model_turn(step)] == [PLAN, GENERATE]


# --- the user's switches (the web UI's control bar) -------------------------------------------


@pytest.mark.parametrize(
    ("route", "switches", "middle", "note"),
    [
        (Route.RAG, {"use_knowledge": False}, [], "the user turned the knowledge base off"),
        (Route.RAG, {"use_tools": False}, [RETRIEVE], None),
        (Route.REACT, {"use_tools": False}, [], "the user turned tools off"),
        (Route.SINGLE_TOOL, {"use_knowledge": False}, [PLAN], None),
    ],
)
def test_switched_off_capabilities_are_skipped_and_said(
    route: Route, switches: dict[str, bool], middle: list[str], note: str | None
) -> None:
    request = ChatRequested.model_validate(
        {"text": "q", "reply_to": REPLY_TO, **switches, **ENVELOPE}
    )
    allowed = caps("clock", rag=True).for_request(request)
    assert _walk(route, allowed) == [FIRST_STEP, "route.requested", *middle, GENERATE,
                                     EVALUATE, "turn.completed"]  # fmt: skip
    said = " ".join(allowed.status(route))
    if note is None:
        assert "the user turned" not in said
    else:
        assert note in said


def test_no_switch_keeps_the_same_capabilities() -> None:
    found = caps("clock", rag=True)
    assert found.for_request(make_run().request) is found
