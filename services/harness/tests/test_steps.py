"""Unit tests of the routes as data: `build_command`, `after_route`, `after_observation`, and
the capability status every answer carries (`Capabilities.status`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from weir_common.events import (
    AnswerGenerateRequested,
    ChatRequested,
    Intent,
    MemoryContext,
    MemoryContextRequested,
    Observation,
    Passage,
    RagRetrieveRequested,
    ReactStepRequested,
    Route,
    RouteRequested,
    ServerStatus,
    ToolInfo,
    ToolsCallRequested,
    ToolsCatalogUpdated,
    Turn,
    TurnCompleted,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import PlannedCall, Run, RunState, RunStatus
from weir_harness.settings import HarnessSettings
from weir_harness.steps import (
    CALL,
    FIRST_STEP,
    GENERATE,
    LOOP_STEPS,
    PLAN,
    RETRIEVE,
    after_observation,
    after_route,
    build_command,
)

pytestmark = pytest.mark.unit

KB_ON = "Knowledge base: connected."
KB_OFF = "Knowledge base: not connected."
NO_TOOLS = "Tools: none connected."
KB_WARNING = "The knowledge base is not connected"
TOOLS_WARNING = "No tools are connected"

SETTINGS = HarnessSettings(
    database_url="postgresql://unused",
    rag_top_k=7,
    agent_max_model_turns=6,
    agent_max_tool_calls=8,
    agent_max_repeated_tool_calls=1,
    agent_max_runtime_seconds=60.0,
    tool_timeout_s=30.0,
)
NOTHING = Capabilities()


def tool(name: str, server: str = "builtin") -> ToolInfo:
    return ToolInfo(name=name, description=f"the {name} tool", server=server)


def with_tools(*names: str, rag: bool = False) -> Capabilities:
    caps = Capabilities(rag=rag)
    caps.update(ToolsCatalogUpdated(tools=[tool(n) for n in names]))
    return caps


def _run(*, private: bool = False, state: RunState | None = None) -> Run:
    request = ChatRequested(
        text="what is weir?",
        reply_to="weir.reply.unit",
        private=private,
        run_id="run-1",
        conversation_id="conv-1",
        user_id="user-1",
    )
    return Run(
        run_id="run-1",
        conversation_id="conv-1",
        user_id="user-1",
        status=RunStatus.RUNNING,
        request=request,
        state=state or RunState(),
    )


def _assert_envelope(command: object) -> None:
    assert getattr(command, "run_id", None) == "run-1"
    assert getattr(command, "conversation_id", None) == "conv-1"
    assert getattr(command, "user_id", None) == "user-1"


# --- build_command -----------------------------------------------------------------------------


@pytest.mark.parametrize("private", [False, True])
def test_memory_context_command(private: bool) -> None:
    command = build_command(_run(private=private), FIRST_STEP, 1, NOTHING, SETTINGS)
    assert isinstance(command, MemoryContextRequested)
    assert command.query == "what is weir?"
    assert command.private is private
    assert command.attempt == 1
    _assert_envelope(command)


def test_route_command_carries_the_attempt() -> None:
    command = build_command(_run(), "route.requested", 2, NOTHING, SETTINGS)
    assert isinstance(command, RouteRequested)
    assert command.query == "what is weir?"
    assert command.attempt == 2
    _assert_envelope(command)


def test_every_build_gets_a_new_event_id() -> None:
    run = _run()
    first = build_command(run, "route.requested", 1, NOTHING, SETTINGS)
    again = build_command(run, "route.requested", 1, NOTHING, SETTINGS)
    assert first.event_id != again.event_id


def test_retrieve_command_asks_for_top_k_passages() -> None:
    command = build_command(_run(), RETRIEVE, 3, Capabilities(rag=True), SETTINGS)
    assert isinstance(command, RagRetrieveRequested)
    assert command.query == "what is weir?"
    assert command.top_k == 7
    assert command.attempt == 3
    _assert_envelope(command)


def test_generate_command_carries_context_intent_route_and_reply_to() -> None:
    context = MemoryContext(
        history=[Turn(run_id="r0", user="hi", assistant="hello")],
        summary="they greeted",
        facts=["likes tea"],
    )
    state = RunState(context=context, intent=Intent.KNOWLEDGE, route=Route.RAG, rule="kb")
    command = build_command(_run(state=state), GENERATE, 1, NOTHING, SETTINGS)
    assert isinstance(command, AnswerGenerateRequested)
    assert command.query == "what is weir?"
    assert command.reply_to == "weir.reply.unit"
    assert command.context == context
    assert command.intent is Intent.KNOWLEDGE
    assert command.route is Route.RAG
    assert command.capability_notes[:2] == [KB_OFF, NO_TOOLS]
    assert len(command.capability_notes) == 3
    assert KB_WARNING in command.capability_notes[2]
    assert (command.evidence, command.observations) == ([], [])
    _assert_envelope(command)


def test_generate_command_defaults_without_earlier_results() -> None:
    command = build_command(_run(), GENERATE, 1, NOTHING, SETTINGS)
    assert isinstance(command, AnswerGenerateRequested)
    assert command.context == MemoryContext()
    assert command.intent is Intent.CHAT
    assert command.route is Route.PLAIN_CHAT
    assert command.capability_notes == [KB_OFF, NO_TOOLS]


def test_generate_command_carries_evidence_observations_and_the_stop_reason() -> None:
    passage = Passage(chunk_id="c1", document_id="d1", source="guide.md", text="weir is…")
    seen = Observation(tool="search", arguments={"q": "weir"}, content="found it")
    state = RunState(
        route=Route.REACT,
        evidence=[passage],
        observations=[seen],
        stop_reason="the tool-call budget (8) is used up",
    )
    command = build_command(_run(state=state), GENERATE, 1, with_tools("search"), SETTINGS)
    assert isinstance(command, AnswerGenerateRequested)
    assert command.evidence == [passage]
    assert command.observations == [seen]
    assert command.capability_notes == [
        KB_OFF,
        "Tools: search.",
        "The tool loop stopped early: the tool-call budget (8) is used up.",
    ]


@pytest.mark.parametrize(
    ("route", "turns", "calls", "turns_left", "calls_left"),
    [
        (Route.REACT, 1, 0, 4, 8),  # this planning turn counted, one kept for the answer
        (Route.REACT, 3, 2, 2, 6),
        (Route.REACT, 5, 4, 0, 4),
        (Route.REACT, 9, 9, 0, 0),  # never negative
        (Route.SINGLE_TOOL, 1, 0, 4, 1),
        (Route.SINGLE_TOOL, 2, 1, 3, 0),
    ],
)
def test_plan_command_carries_what_is_left_of_the_budgets(
    route: Route, turns: int, calls: int, turns_left: int, calls_left: int
) -> None:
    context = MemoryContext(facts=["likes tea"])
    seen = [Observation(tool="clock", content="12:00")]
    state = RunState(
        route=route, context=context, observations=seen, model_turns=turns, tool_calls=calls
    )
    command = build_command(_run(state=state), PLAN, 1, with_tools("clock"), SETTINGS)
    assert isinstance(command, ReactStepRequested)
    assert command.query == "what is weir?"
    assert command.context == context
    assert command.observations == seen
    assert (command.model_turns_left, command.tool_calls_left) == (turns_left, calls_left)
    _assert_envelope(command)


def test_call_command_sends_the_planned_call_with_an_idempotency_key() -> None:
    state = RunState(
        route=Route.REACT,
        tool_calls=3,
        pending_calls=[
            PlannedCall(tool="weather", arguments={"city": "Oslo"}, thought="look it up")
        ],
    )
    run = _run(state=state)
    command = build_command(run, CALL, 2, with_tools("weather"), SETTINGS)
    assert isinstance(command, ToolsCallRequested)
    [call] = command.calls
    assert (call.tool, call.arguments) == ("weather", {"city": "Oslo"})
    assert call.idempotency_key == "run-1:3"
    assert command.timeout_s == 30.0
    assert command.attempt == 2
    _assert_envelope(command)
    # a retry is the same call: same key, new event id
    again = build_command(run, CALL, 3, with_tools("weather"), SETTINGS)
    assert isinstance(again, ToolsCallRequested)
    assert again.calls == command.calls
    assert again.event_id != command.event_id


def test_call_command_without_a_planned_call_is_refused() -> None:
    with pytest.raises(ValueError, match="no planned tool call"):
        build_command(_run(), CALL, 1, with_tools("weather"), SETTINGS)


@pytest.mark.parametrize("private", [False, True])
def test_turn_completed_command(private: bool) -> None:
    state = RunState(answer="weir is a platform")
    command = build_command(
        _run(private=private, state=state), "turn.completed", 1, NOTHING, SETTINGS
    )
    assert isinstance(command, TurnCompleted)
    assert command.user_text == "what is weir?"
    assert command.assistant_text == "weir is a platform"
    assert command.private is private
    _assert_envelope(command)


def test_turn_completed_without_answer_sends_empty_text() -> None:
    command = build_command(_run(), "turn.completed", 1, NOTHING, SETTINGS)
    assert isinstance(command, TurnCompleted)
    assert command.assistant_text == ""


def test_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown step"):
        build_command(_run(), "nope.requested", 1, NOTHING, SETTINGS)


def test_the_loop_steps_are_planning_and_calling() -> None:
    assert set(LOOP_STEPS) == {PLAN, CALL}


# --- after_route -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "rag", "tools", "expected"),
    [
        (None, True, True, GENERATE),
        (Route.PLAIN_CHAT, True, True, GENERATE),
        (Route.RAG, True, False, RETRIEVE),
        (Route.RAG, False, True, GENERATE),
        (Route.SINGLE_TOOL, False, True, PLAN),
        (Route.SINGLE_TOOL, True, False, GENERATE),
        (Route.REACT, False, True, PLAN),
        (Route.REACT, True, False, GENERATE),
    ],
)
def test_after_route(route: Route | None, rag: bool, tools: bool, expected: str) -> None:
    caps = with_tools("search", rag=rag) if tools else Capabilities(rag=rag)
    assert after_route(_run(state=RunState(route=route)), caps) == expected


# --- after_observation -------------------------------------------------------------------------


def test_single_tool_answers_after_one_call() -> None:
    run = _run(state=RunState(route=Route.SINGLE_TOOL, model_turns=1, tool_calls=1))
    assert after_observation(run, SETTINGS) == GENERATE
    assert run.state.stop_reason is None  # the route's own shape, not a budget


def test_single_tool_plans_again_after_a_refused_call() -> None:
    run = _run(state=RunState(route=Route.SINGLE_TOOL, model_turns=1, tool_calls=0))
    assert after_observation(run, SETTINGS) == PLAN


def test_react_plans_again_within_its_budgets() -> None:
    run = _run(state=RunState(route=Route.REACT, model_turns=4, tool_calls=7))
    assert after_observation(run, SETTINGS) == PLAN
    assert run.state.stop_reason is None


def test_react_stops_on_the_tool_call_budget() -> None:
    run = _run(state=RunState(route=Route.REACT, model_turns=1, tool_calls=8))
    assert after_observation(run, SETTINGS) == GENERATE
    assert run.state.stop_reason == "the tool-call budget (8) is used up"


def test_react_keeps_one_model_turn_for_the_answer() -> None:
    run = _run(state=RunState(route=Route.REACT, model_turns=5, tool_calls=1))
    assert after_observation(run, SETTINGS) == GENERATE
    assert run.state.stop_reason == "the model-turn budget (6) is used up"


# --- capability status -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "rag", "tools", "expected"),
    [
        (None, False, False, [KB_OFF, NO_TOOLS]),
        (Route.PLAIN_CHAT, False, False, [KB_OFF, NO_TOOLS]),
        (Route.PLAIN_CHAT, True, True, [KB_ON, "Tools: clock, search."]),
        (Route.RAG, False, False, [KB_OFF, NO_TOOLS, KB_WARNING]),
        (Route.RAG, True, False, [KB_ON, NO_TOOLS]),
        (Route.RAG, False, True, [KB_OFF, "Tools: clock, search.", KB_WARNING]),
        (Route.SINGLE_TOOL, False, False, [KB_OFF, NO_TOOLS, TOOLS_WARNING]),
        (Route.SINGLE_TOOL, False, True, [KB_OFF, "Tools: clock, search."]),
        (Route.SINGLE_TOOL, True, False, [KB_ON, NO_TOOLS, TOOLS_WARNING]),
        (Route.REACT, False, False, [KB_OFF, NO_TOOLS, TOOLS_WARNING]),
        (Route.REACT, True, True, [KB_ON, "Tools: clock, search."]),
    ],
)
def test_capability_status(
    route: Route | None, rag: bool, tools: bool, expected: list[str]
) -> None:
    caps = with_tools("search", "clock", rag=rag) if tools else Capabilities(rag=rag)
    notes = caps.status(route)
    assert len(notes) == len(expected), notes
    for note, fragment in zip(notes, expected, strict=True):
        assert fragment in note


def test_status_names_tool_servers_that_are_down() -> None:
    caps = Capabilities()
    caps.update(
        ToolsCatalogUpdated(
            tools=[tool("clock")],
            servers=[
                ServerStatus(name="builtin", connected=True),
                ServerStatus(name="github", connected=False, detail="refused"),
                ServerStatus(name="jira", connected=False),
            ],
        )
    )
    assert caps.status(Route.REACT) == [
        KB_OFF,
        "Tools: clock.",
        "Tool servers unavailable: github, jira.",
    ]


def test_a_newer_catalogue_replaces_the_older_one() -> None:
    caps = with_tools("clock", "search")
    assert caps.has_tools
    caps.update(ToolsCatalogUpdated(tools=[tool("weather")]))
    assert set(caps.tools) == {"weather"}
    caps.update(ToolsCatalogUpdated())
    assert not caps.has_tools
    assert caps.tools == {}
    assert caps.status(Route.REACT)[1:] == [
        NO_TOOLS,
        "No tools are connected: no live data can be fetched and no action can be taken.",
    ]


def test_run_state_round_trips_through_json() -> None:
    """The run state round-trips through JSON (it is snapshotted in PostgreSQL)."""
    state = RunState(
        route=Route.REACT,
        call_counts={'clock:{"tz": "UTC"}': 1},
        pending_calls=[PlannedCall(tool="clock", arguments={"tz": "UTC"})],
        loop_started_at=datetime(2030, 1, 1, tzinfo=UTC),
        observations=[Observation(tool="clock", arguments={"tz": "UTC"}, content="12:00")],
    )
    assert RunState.model_validate(state.model_dump(mode="json")) == state


def test_planned_call_signature_ignores_argument_order() -> None:
    first = PlannedCall(tool="search", arguments={"q": "weir", "limit": 3})
    second = PlannedCall(tool="search", arguments={"limit": 3, "q": "weir"})
    other = PlannedCall(tool="search", arguments={"q": "weir", "limit": 4})
    assert first.signature == second.signature
    assert first.signature != other.signature
