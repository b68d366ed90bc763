"""RAG, single-tool and ReAct runs against the run store, with an injected clock (the
in-memory store in the unit tier; PostgreSQL too for the tests marked `stores`).

The test plays every worker: the knowledge base, the planner, the tools and the answerer.
Nothing sleeps; time moves only when the test advances the clock and calls `sweep()`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import (
    AnswerGenerated,
    AnswerGenerateRequested,
    ChatRequested,
    Event,
    HarnessResult,
    Intent,
    MemoryContext,
    MemoryContextReady,
    MemoryContextRequested,
    Observation,
    Passage,
    RagRetrieveCompleted,
    RagRetrieveRequested,
    ReactStepDecided,
    ReactStepRequested,
    Route,
    RouteDecided,
    RouteRequested,
    RunCompleted,
    RunStep,
    StepCommand,
    StepFailed,
    ToolCallResult,
    ToolInfo,
    ToolsCallCompleted,
    ToolsCallRequested,
    ToolsCatalogUpdated,
    TurnCompleted,
    TurnRecorded,
    new_id,
)
from weir_harness.budget import size_of
from weir_harness.capabilities import Capabilities
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository, RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings

STORES = ("memory",)  # and PostgreSQL for the tests marked `stores` (conftest)

REPLY_TO = "weir.reply.route-tests"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CONTEXT = MemoryContext(facts=["the user lives in Oslo"])
KB_ON = "Knowledge base: connected."
KB_OFF = "Knowledge base: not connected."
NO_TOOLS = "Tools: none connected."
TOOLS_WARNING = "No tools are connected"
KB_WARNING = "The knowledge base is not connected"
INTENTS = {
    Route.PLAIN_CHAT: Intent.CHAT,
    Route.RAG: Intent.KNOWLEDGE,
    Route.SINGLE_TOOL: Intent.EXTERNAL_DATA,
    Route.REACT: Intent.EXTERNAL_ACTION,
}


class ManualClock:
    """A wall clock the test moves by hand (timezone-aware, UTC)."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def catalogue(*names: str) -> ToolsCatalogUpdated:
    return ToolsCatalogUpdated(
        tools=[ToolInfo(name=n, description=f"the {n} tool", server="builtin") for n in names]
    )


def with_tools(*names: str, rag: bool = False) -> Capabilities:
    caps = Capabilities(rag=rag)
    caps.update(catalogue(*names))
    return caps


@pytest.fixture
def tools_service(repo: RunStore, settings: HarnessSettings, clock: ManualClock) -> RunService:
    """A harness whose catalogue holds a search, a weather and a clock tool."""
    return RunService(
        repo, settings, clock=clock, capabilities=with_tools("search", "weather", "clock")
    )


# --- the workers -------------------------------------------------------------------------------


def chat(conversation_id: str | None = None, text: str = "what is the weather?") -> ChatRequested:
    return ChatRequested(
        text=text,
        reply_to=REPLY_TO,
        run_id=new_id(),
        conversation_id=conversation_id or new_id(),
        user_id="user-1",
    )


def type_of(event: Event) -> str:
    return str(event.model_dump(include={"type"})["type"])


def types(out: list[Outgoing]) -> list[str]:
    return [type_of(item.event) for item in out]


def command_of(out: list[Outgoing]) -> StepCommand:
    commands = [item.event for item in out if isinstance(item.event, StepCommand)]
    assert len(commands) == 1, f"expected one command, got {types(out)}"
    return commands[0]


def run_steps(out: list[Outgoing]) -> list[tuple[str, str, str | None]]:
    """The visible steps in `out` (kind, content, tool); each goes to the requester."""
    found: list[tuple[str, str, str | None]] = []
    for item in out:
        if isinstance(item.event, RunStep):
            assert item.topic == REPLY_TO
            found.append((item.event.kind, item.event.content, item.event.tool))
    return found


def reply(command: StepCommand, route: Route = Route.PLAIN_CHAT) -> HarnessResult:
    """The result of every worker but the planner and the tools."""
    envelope, request_id = command.envelope(), command.event_id
    if isinstance(command, MemoryContextRequested):
        return MemoryContextReady(context=CONTEXT, request_id=request_id, **envelope)
    if isinstance(command, RouteRequested):
        return RouteDecided(
            intent=INTENTS[route], route=route, rule="test", request_id=request_id, **envelope
        )
    if isinstance(command, RagRetrieveRequested):
        return RagRetrieveCompleted(request_id=request_id, **envelope)
    if isinstance(command, AnswerGenerateRequested):
        return AnswerGenerated(
            text="the answer [1]", model="scripted", request_id=request_id, **envelope
        )
    if isinstance(command, TurnCompleted):
        return TurnRecorded(request_id=request_id, **envelope)
    raise AssertionError(f"no scripted worker for {type_of(command)}")


def plan(
    command: StepCommand, tool: str | None = None, thought: str = "", **arguments: Any
) -> ReactStepDecided:
    assert isinstance(command, ReactStepRequested), type_of(command)
    return ReactStepDecided(
        thought=thought,
        tool=tool,
        arguments=arguments,
        request_id=command.event_id,
        **command.envelope(),
    )


def tool_result(
    command: StepCommand, content: str | None = None, is_error: bool = False
) -> ToolsCallCompleted:
    assert isinstance(command, ToolsCallRequested), type_of(command)
    [call] = command.calls
    result = ToolCallResult(
        tool=call.tool,
        arguments=call.arguments,
        content=content if content is not None else f"result of {call.arguments}",
        is_error=is_error,
        duration_ms=12.5,
    )
    return ToolsCallCompleted(results=[result], request_id=command.event_id, **command.envelope())


def failure(command: StepCommand, reason: str = "busy") -> StepFailed:
    return StepFailed(
        step=type_of(command),
        reason=reason,
        transient=True,
        request_id=command.event_id,
        **command.envelope(),
    )


async def routed(
    service: RunService, route: Route, request: ChatRequested | None = None
) -> list[Outgoing]:
    """Open a run and answer memory and router; the outgoing of `route.decided`."""
    memory = command_of(await service.on_chat(request or chat(), TRACEPARENT))
    route_command = command_of(await service.on_result(reply(memory)))
    return await service.on_result(reply(route_command, route))


async def finish(service: RunService, command: StepCommand) -> list[Outgoing]:
    """Answer generation and memory until the run is done; the outgoing of the last result."""
    while True:
        out = await service.on_result(reply(command))
        following = [item.event for item in out if isinstance(item.event, StepCommand)]
        if not following or following[0].run_id != command.run_id:
            return out
        command = following[0]


async def load(repo: RunStore, run_id: str | None) -> Run:
    async with repo.transaction() as tx:
        run = await tx.get(run_id or "")
    assert run is not None
    return run


async def log_of(repo: RunStore, run_id: str | None) -> list[dict[str, Any]]:
    return await repo.steps(run_id or "")


def commands_in(log: list[dict[str, Any]], step: str) -> list[dict[str, Any]]:
    return [s for s in log if s["kind"] == "command" and s["step"] == step]


def passage(source: str, chunk: str, text: str) -> Passage:
    return Passage(
        chunk_id=f"{source}#{chunk}",
        document_id=source,
        source=source,
        locator=f"§{chunk}",
        text=text,
        score=0.5,
    )


# --- RAG ---------------------------------------------------------------------------------------


async def test_rag_route_retrieves_then_answers_from_the_evidence(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    service = RunService(repo, settings, clock=clock, capabilities=Capabilities(rag=True))
    request = chat(text="how do I deploy weir?")
    out = await routed(service, Route.RAG, request)
    retrieve = command_of(out)
    assert isinstance(retrieve, RagRetrieveRequested)
    assert (retrieve.query, retrieve.top_k, retrieve.attempt) == ("how do I deploy weir?", 5, 1)
    assert retrieve.envelope() == request.envelope()
    assert out[0].traceparent == TRACEPARENT
    assert (await load(repo, request.run_id)).deadline == clock.now + timedelta(
        seconds=settings.step_timeout_s
    )

    passages = [
        passage("deploy.md", "1", "run `weir up`"),
        passage("faq.md", "7", "ports are on loopback"),
        passage("deploy.md", "2", "then open the gateway"),
    ]
    out = await service.on_result(
        RagRetrieveCompleted(passages=passages, request_id=retrieve.event_id, **retrieve.envelope())
    )
    assert types(out) == ["run.step", "answer.generate.requested"]
    assert run_steps(out) == [("retrieval", "deploy.md, faq.md", None)]
    assert out[0].event.envelope() == request.envelope()
    assert out[0].traceparent == TRACEPARENT
    generate = out[1].event
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.evidence == passages
    assert generate.observations == []
    assert (generate.route, generate.intent) == (Route.RAG, Intent.KNOWLEDGE)
    assert generate.context == CONTEXT
    assert generate.capability_notes == [KB_ON, NO_TOOLS]

    out = await service.on_result(reply(generate))
    assert types(out) == ["run.completed", "turn.completed"]
    assert isinstance(out[0].event, RunCompleted)
    assert out[0].event.route == "rag"
    assert await finish(service, command_of(out)) == []
    done = await load(repo, request.run_id)
    assert done.status is RunStatus.COMPLETED
    assert done.state.evidence == passages
    assert (done.state.model_turns, done.state.tool_calls) == (1, 0)  # retrieval is no model turn
    log = await log_of(repo, request.run_id)
    assert [(s["kind"], s["step"]) for s in log[5:9]] == [
        ("command", "rag.retrieve.requested"),
        ("result", "rag.retrieve.requested"),
        ("command", "answer.generate.requested"),
        ("result", "answer.generate.requested"),
    ]


async def test_rag_route_with_nothing_found_still_answers(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    service = RunService(repo, settings, clock=clock, capabilities=Capabilities(rag=True))
    retrieve = command_of(await routed(service, Route.RAG))
    out = await service.on_result(reply(retrieve))
    assert run_steps(out) == [("retrieval", "nothing found", None)]
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.evidence == []


async def test_rag_route_without_a_knowledge_base_answers_with_the_note(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    service = RunService(repo, settings, clock=clock, capabilities=Capabilities(rag=False))
    out = await routed(service, Route.RAG)
    assert types(out) == ["answer.generate.requested"]
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.evidence == []
    assert generate.capability_notes[:2] == [KB_OFF, NO_TOOLS]
    assert len(generate.capability_notes) == 3
    assert KB_WARNING in generate.capability_notes[2]
    assert commands_in(await log_of(repo, generate.run_id), "rag.retrieve.requested") == []


@pytest.mark.parametrize(("connected", "first"), [(True, RagRetrieveRequested), (False, None)])
async def test_knowledge_base_defaults_to_the_setting(
    repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
    connected: bool,
    first: type | None,
) -> None:
    service = RunService(
        repo, settings.model_copy(update={"rag_connected": connected}), clock=clock
    )
    assert service.capabilities.rag is connected
    command = command_of(await routed(service, Route.RAG))
    assert isinstance(command, first or AnswerGenerateRequested)


# --- one tool ----------------------------------------------------------------------------------


@pytest.mark.stores("memory", "postgres")
async def test_single_tool_route_calls_one_tool_then_answers(
    tools_service: RunService, repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    request = chat()
    out = await routed(tools_service, Route.SINGLE_TOOL, request)
    planning = command_of(out)
    assert isinstance(planning, ReactStepRequested)
    assert planning.query == "what is the weather?"
    assert planning.context == CONTEXT
    assert planning.observations == []
    assert (planning.model_turns_left, planning.tool_calls_left) == (4, 1)
    assert planning.envelope() == request.envelope()
    assert out[0].traceparent == TRACEPARENT
    run = await load(repo, request.run_id)
    assert run.state.loop_started_at == clock.now
    assert run.state.model_turns == 1

    clock.advance(2)
    out = await tools_service.on_result(
        plan(planning, "weather", "I need today's weather", city="Oslo")
    )
    assert types(out) == ["run.step", "run.step", "tools.call.requested"]
    assert run_steps(out) == [
        ("thought", "I need today's weather", None),
        ("action", 'weather({"city": "Oslo"})', "weather"),
    ]
    assert all(item.traceparent == TRACEPARENT for item in out)
    call = command_of(out)
    assert isinstance(call, ToolsCallRequested)
    assert (call.calls[0].tool, call.calls[0].arguments) == ("weather", {"city": "Oslo"})
    assert call.calls[0].idempotency_key == f"{request.run_id}:0"
    assert call.timeout_s == settings.tool_timeout_s
    assert call.envelope() == request.envelope()

    out = await tools_service.on_result(tool_result(call, "sunny, 21 °C"))
    assert types(out) == ["run.step", "answer.generate.requested"]
    assert run_steps(out) == [("observation", "sunny, 21 °C", "weather")]
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.observations == [
        Observation(tool="weather", arguments={"city": "Oslo"}, content="sunny, 21 °C")
    ]
    assert generate.route is Route.SINGLE_TOOL
    assert generate.capability_notes == [KB_OFF, "Tools: clock, search, weather."]

    out = await tools_service.on_result(reply(generate))
    assert types(out) == ["run.completed", "turn.completed"]
    assert await finish(tools_service, command_of(out)) == []
    done = await load(repo, request.run_id)
    assert done.status is RunStatus.COMPLETED
    assert (done.state.model_turns, done.state.tool_calls) == (2, 1)
    assert done.state.pending_calls == []
    assert [s["kind"] for s in await log_of(repo, request.run_id)].count("budget") == 0


async def test_a_huge_observation_is_trimmed_to_the_message_budget_with_a_note(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    small = settings.model_copy(update={"max_message_bytes": 50_000})
    service = RunService(repo, small, clock=clock, capabilities=with_tools("fetch"))
    request = chat()
    planning = command_of(await routed(service, Route.SINGLE_TOOL, request))
    call = command_of(await service.on_result(plan(planning, "fetch", url="https://x.test")))
    out = await service.on_result(tool_result(call, "page " * 40_000))

    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert size_of(generate) <= 50_000
    assert generate.observations[0].content.startswith("page page")
    log = await log_of(repo, request.run_id)
    notes = [s for s in log if s["kind"] == "budget"]
    assert [(s["step"], s["event_id"]) for s in notes] == [
        ("answer.generate.requested", generate.event_id)
    ]
    assert notes[0]["payload"]["trimmed"] == ["observations trimmed: 1 (fetch, 200000 chars)"]
    run = await load(repo, request.run_id)
    assert len(run.state.observations[0].content) == 200_000  # the run keeps it whole


@pytest.mark.parametrize("route", [Route.SINGLE_TOOL, Route.REACT])
async def test_tool_routes_without_tools_answer_with_the_note(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock, route: Route
) -> None:
    service = RunService(repo, settings, clock=clock)
    out = await routed(service, route)
    assert types(out) == ["answer.generate.requested"]
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.route is route
    assert generate.observations == []
    assert generate.capability_notes[:2] == [KB_OFF, NO_TOOLS]
    assert len(generate.capability_notes) == 3
    assert generate.capability_notes[2].startswith(TOOLS_WARNING)
    run = await load(repo, generate.run_id)
    assert run.state.loop_started_at is None

    # a catalogue arrives (what the handlers do with tools.catalog.updated): runs now use tools
    service.capabilities.update(catalogue("weather"))
    assert isinstance(command_of(await routed(service, route)), ReactStepRequested)
    # and a catalogue without tools takes them away again
    service.capabilities.update(ToolsCatalogUpdated())
    assert isinstance(command_of(await routed(service, route)), AnswerGenerateRequested)


async def test_planner_that_needs_no_tool_answers_at_once(
    tools_service: RunService, repo: RunStore
) -> None:
    planning = command_of(await routed(tools_service, Route.REACT))
    out = await tools_service.on_result(plan(planning, None, "I can answer from memory"))
    assert types(out) == ["run.step", "answer.generate.requested"]
    assert run_steps(out) == [("thought", "I can answer from memory", None)]
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.observations == []
    assert generate.capability_notes == [KB_OFF, "Tools: clock, search, weather."]
    run = await load(repo, generate.run_id)
    assert (run.state.model_turns, run.state.tool_calls) == (2, 0)
    assert commands_in(await log_of(repo, run.run_id), "tools.call.requested") == []


# --- ReAct budgets -----------------------------------------------------------------------------


@pytest.mark.stores("memory", "postgres")
async def test_model_turn_budget_ends_the_loop_and_keeps_one_turn_for_the_answer(
    tools_service: RunService, repo: RunStore, settings: HarnessSettings
) -> None:
    assert settings.agent_max_model_turns == 6
    assert settings.agent_max_tool_calls > 6
    request = chat()
    command = command_of(await routed(tools_service, Route.REACT, request))
    plans: list[ReactStepRequested] = []
    calls: list[ToolsCallRequested] = []
    while isinstance(command, ReactStepRequested):
        plans.append(command)
        call = command_of(await tools_service.on_result(plan(command, "search", q=len(plans))))
        assert isinstance(call, ToolsCallRequested)
        calls.append(call)
        command = command_of(await tools_service.on_result(tool_result(call)))

    assert len(plans) == 5
    assert [p.model_turns_left for p in plans] == [4, 3, 2, 1, 0]
    assert [p.tool_calls_left for p in plans] == [8, 7, 6, 5, 4]
    assert [len(p.observations) for p in plans] == [0, 1, 2, 3, 4]
    assert [c.calls[0].idempotency_key for c in calls] == [
        f"{request.run_id}:{i}" for i in range(5)
    ]
    assert isinstance(command, AnswerGenerateRequested)
    assert len(command.observations) == 5
    assert command.capability_notes[-1] == (
        "The tool loop stopped early: the model-turn budget (6) is used up."
    )
    assert (await load(repo, request.run_id)).state.model_turns == 6  # the answer is the 6th

    await finish(tools_service, command)
    log = await log_of(repo, request.run_id)
    budget = [s for s in log if s["kind"] == "budget"]
    assert len(budget) == 1
    assert "model-turn budget (6)" in budget[0]["payload"]["rule"]
    assert len(commands_in(log, "react.step.requested")) == 5
    assert len(commands_in(log, "answer.generate.requested")) == 1


async def test_tool_call_budget_ends_the_loop(
    repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    budgets = settings.model_copy(update={"agent_max_tool_calls": 2, "agent_max_model_turns": 20})
    service = RunService(repo, budgets, clock=clock, capabilities=with_tools("search"))
    request = chat()
    command = command_of(await routed(service, Route.REACT, request))
    plans: list[ReactStepRequested] = []
    while isinstance(command, ReactStepRequested):
        plans.append(command)
        call = command_of(await service.on_result(plan(command, "search", q=f"page {len(plans)}")))
        command = command_of(await service.on_result(tool_result(call)))

    assert [p.tool_calls_left for p in plans] == [2, 1]
    assert [p.model_turns_left for p in plans] == [18, 17]
    assert isinstance(command, AnswerGenerateRequested)
    assert [o.arguments for o in command.observations] == [{"q": "page 1"}, {"q": "page 2"}]
    assert command.capability_notes[-1] == (
        "The tool loop stopped early: the tool-call budget (2) is used up."
    )
    run = await load(repo, request.run_id)
    assert (run.state.model_turns, run.state.tool_calls) == (3, 2)
    budget = [s for s in await log_of(repo, request.run_id) if s["kind"] == "budget"]
    assert [s["payload"]["rule"] for s in budget] == ["the tool-call budget (2) is used up"]


async def test_repeated_identical_call_is_refused_and_not_sent(
    tools_service: RunService, repo: RunStore
) -> None:
    request = chat()
    first_plan = command_of(await routed(tools_service, Route.REACT, request))
    call = command_of(
        await tools_service.on_result(plan(first_plan, "search", q="weir", lang="en"))
    )
    second_plan = command_of(await tools_service.on_result(tool_result(call, "weir is…")))

    # the same call again, its arguments in another order
    out = await tools_service.on_result(
        plan(second_plan, "search", "let me search again", lang="en", q="weir")
    )
    assert types(out) == ["run.step", "run.step", "react.step.requested"]
    refusal = (
        "Refused: search was already called with these arguments; its result is above."
        " Use it or answer."
    )
    assert run_steps(out) == [
        ("thought", "let me search again", None),
        ("observation", refusal, "search"),
    ]
    third_plan = command_of(out)
    assert isinstance(third_plan, ReactStepRequested)
    assert third_plan.observations == [
        Observation(tool="search", arguments={"q": "weir", "lang": "en"}, content="weir is…"),
        Observation(
            tool="search", arguments={"lang": "en", "q": "weir"}, content=refusal, is_error=True
        ),
    ]
    assert third_plan.tool_calls_left == 7  # the refused call cost no tool call
    assert third_plan.model_turns_left == 2

    out = await tools_service.on_result(plan(third_plan, None, "I have it"))
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert [o.is_error for o in generate.observations] == [False, True]
    assert not any("stopped early" in note for note in generate.capability_notes)

    log = await log_of(repo, request.run_id)
    assert len(commands_in(log, "tools.call.requested")) == 1
    [budget] = [s for s in log if s["kind"] == "budget"]
    assert budget["step"] == "react.step.requested"
    assert budget["payload"] == {
        "rule": "repeated_call",
        "tool": "search",
        "arguments": {"lang": "en", "q": "weir"},
    }
    assert (await load(repo, request.run_id)).state.tool_calls == 1


# --- the time budget ---------------------------------------------------------------------------


async def test_time_budget_ends_the_run_while_a_tool_call_is_pending(
    tools_service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    conversation = new_id()
    request, waiting = chat(conversation), chat(conversation, "and tomorrow?")
    first_plan = command_of(await routed(tools_service, Route.REACT, request))
    assert await tools_service.on_chat(waiting, None) == []  # queued behind the loop
    call = command_of(await tools_service.on_result(plan(first_plan, "weather", city="Oslo")))
    clock.advance(20)
    second_plan = command_of(await tools_service.on_result(tool_result(call, "sunny")))
    pending = command_of(await tools_service.on_result(plan(second_plan, "clock")))
    assert isinstance(pending, ToolsCallRequested)
    loop_end = clock.now + timedelta(seconds=40)
    assert (await load(repo, request.run_id)).deadline == loop_end  # sooner than the call's own

    clock.advance(39.9)  # 59.9 s into the loop
    assert await tools_service.sweep() == []
    clock.advance(0.1)
    out = await tools_service.sweep()
    assert types(out) == ["run.completed", "turn.completed"]
    completed = out[0].event
    assert isinstance(completed, RunCompleted)
    assert out[0].topic == REPLY_TO
    assert out[0].traceparent == TRACEPARENT
    assert completed.text.startswith("I had to stop: the time budget (60 s)")
    assert completed.text.splitlines()[1:] == [
        "What the tools returned so far:",
        "- weather: sunny",
    ]
    assert completed.route == "react"
    turn = command_of(out)
    assert isinstance(turn, TurnCompleted)
    assert turn.assistant_text == completed.text

    run = await load(repo, request.run_id)
    assert run.status is RunStatus.FINISHING
    assert run.state.model_turns == 2  # no model call after the time ran out
    assert run.state.stop_reason == "the time budget (60 s) is used up"
    assert await tools_service.on_result(tool_result(pending, "12:00")) == []  # too late
    assert await tools_service.sweep() == []

    out = await tools_service.on_result(reply(turn))
    assert command_of(out).run_id == waiting.run_id  # the conversation goes on
    log = await log_of(repo, request.run_id)
    assert commands_in(log, "answer.generate.requested") == []
    assert [s["payload"] for s in log if s["kind"] == "budget"] == [
        {"rule": "runtime", "seconds": 60.0}
    ]
    assert "timeout" not in [s["kind"] for s in log]
    assert (await load(repo, request.run_id)).status is RunStatus.COMPLETED


async def test_time_budget_is_checked_before_planning_again(
    tools_service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    first_plan = command_of(await routed(tools_service, Route.REACT))
    call = command_of(await tools_service.on_result(plan(first_plan, "weather", city="Oslo")))
    clock.advance(60)
    # the result arrives before the sweeper noticed: it is kept, but no planning follows
    out = await tools_service.on_result(tool_result(call, "rain"))
    assert types(out) == ["run.step", "run.completed", "turn.completed"]
    assert run_steps(out) == [("observation", "rain", "weather")]
    completed = out[1].event
    assert isinstance(completed, RunCompleted)
    assert completed.text.startswith("I had to stop: the time budget (60 s)")
    assert completed.text.endswith("- weather: rain")
    run = await load(repo, call.run_id)
    assert (run.state.model_turns, run.state.tool_calls) == (1, 1)
    assert commands_in(await log_of(repo, run.run_id), "react.step.requested")[1:] == []


async def test_time_budget_cuts_a_pending_planning_step_short(
    tools_service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    first_plan = command_of(await routed(tools_service, Route.REACT))
    started = clock.now
    call = command_of(await tools_service.on_result(plan(first_plan, "search", q="a")))
    clock.advance(50)
    second_plan = command_of(await tools_service.on_result(tool_result(call)))
    assert isinstance(second_plan, ReactStepRequested)
    run = await load(repo, second_plan.run_id)
    assert run.deadline == started + timedelta(seconds=settings.agent_max_runtime_seconds)

    clock.advance(10)
    out = await tools_service.sweep()
    assert types(out) == ["run.completed", "turn.completed"]
    completed = out[0].event
    assert isinstance(completed, RunCompleted)
    assert completed.text.startswith("I had to stop: the time budget (60 s)")
    assert await tools_service.on_result(plan(second_plan, None)) == []  # too late
    run = await load(repo, second_plan.run_id)
    assert run.state.model_turns == 2
    assert run.step == "turn.completed"


async def test_time_budget_ends_a_tool_call_waiting_for_its_retry(
    tools_service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    first_plan = command_of(await routed(tools_service, Route.REACT))
    call = command_of(await tools_service.on_result(plan(first_plan, "search", q="a")))
    clock.advance(59.9)
    assert await tools_service.on_result(failure(call)) == []
    clock.advance(0.5)
    out = await tools_service.sweep()
    assert types(out) == ["run.completed", "turn.completed"]
    log = await log_of(repo, call.run_id)
    assert len(commands_in(log, "tools.call.requested")) == 1  # not sent again


async def test_time_budget_does_not_cut_the_answer_short(
    tools_service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    first_plan = command_of(await routed(tools_service, Route.REACT))
    clock.advance(59)
    generate = command_of(await tools_service.on_result(plan(first_plan, None)))
    assert isinstance(generate, AnswerGenerateRequested)
    run = await load(repo, generate.run_id)
    assert run.deadline == clock.now + timedelta(seconds=settings.generate_timeout_s)
    clock.advance(settings.generate_timeout_s - 1)
    assert await tools_service.sweep() == []
    out = await tools_service.on_result(reply(generate))
    assert types(out) == ["run.completed", "turn.completed"]
    completed = out[0].event
    assert isinstance(completed, RunCompleted)
    assert completed.text == "the answer [1]"


# --- retries and restarts inside the loop ------------------------------------------------------


async def test_retried_tool_call_keeps_its_key_and_costs_no_model_turn(
    tools_service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    request = chat()
    first_plan = command_of(await routed(tools_service, Route.REACT, request))
    call = command_of(await tools_service.on_result(plan(first_plan, "weather", city="Oslo")))
    assert isinstance(call, ToolsCallRequested)
    key = f"{request.run_id}:0"
    assert call.calls[0].idempotency_key == key

    # a transient failure: the same call again after the backoff
    assert await tools_service.on_result(failure(call, "tool server busy")) == []
    clock.advance(settings.backoff_base_s)
    second = command_of(await tools_service.sweep())
    assert isinstance(second, ToolsCallRequested)
    assert (second.attempt, second.calls[0].idempotency_key) == (2, key)
    assert (second.calls[0].tool, second.calls[0].arguments) == ("weather", {"city": "Oslo"})
    assert second.event_id != call.event_id

    # no answer in time: sent a third time, with the same key
    clock.advance(settings.tool_timeout_s + settings.step_timeout_s)
    assert await tools_service.sweep() == []
    clock.advance(settings.backoff_base_s * 2)
    third = command_of(await tools_service.sweep())
    assert isinstance(third, ToolsCallRequested)
    assert (third.attempt, third.calls[0].idempotency_key) == (3, key)
    run = await load(repo, request.run_id)
    assert (run.state.model_turns, run.state.tool_calls) == (1, 0)

    assert await tools_service.on_result(tool_result(call, "late")) == []  # the first attempt's
    out = await tools_service.on_result(tool_result(third, "sunny"))
    assert run_steps(out) == [("observation", "sunny", "weather")]
    next_plan = command_of(out)
    assert isinstance(next_plan, ReactStepRequested)
    assert next_plan.model_turns_left == 3  # one planning turn so far, this one the second
    assert [o.content for o in next_plan.observations] == ["sunny"]
    next_call = command_of(await tools_service.on_result(plan(next_plan, "clock")))
    assert isinstance(next_call, ToolsCallRequested)
    assert next_call.calls[0].idempotency_key == f"{request.run_id}:1"
    log = await log_of(repo, request.run_id)
    assert [s["attempt"] for s in commands_in(log, "tools.call.requested")] == [1, 2, 3, 1]


async def test_retried_planning_step_costs_no_extra_model_turn(
    tools_service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    first_plan = command_of(await routed(tools_service, Route.REACT))
    assert isinstance(first_plan, ReactStepRequested)
    assert await tools_service.on_result(failure(first_plan, "model overloaded")) == []
    clock.advance(settings.backoff_base_s)
    again = command_of(await tools_service.sweep())
    assert isinstance(again, ReactStepRequested)
    assert again.attempt == 2
    assert again.model_turns_left == first_plan.model_turns_left
    run = await load(repo, again.run_id)
    assert run.state.model_turns == 1
    generate = command_of(await tools_service.on_result(plan(again, None)))
    assert isinstance(generate, AnswerGenerateRequested)
    assert (await load(repo, again.run_id)).state.model_turns == 2


async def test_tool_call_deadline_leaves_the_tool_its_own_timeout(
    tools_service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    """The harness must not give up on a call before the tools service may end it itself."""
    first_plan = command_of(await routed(tools_service, Route.REACT))
    call = command_of(await tools_service.on_result(plan(first_plan, "search", q="slow")))
    assert isinstance(call, ToolsCallRequested)
    run = await load(repo, call.run_id)
    assert run.deadline is not None
    assert run.deadline > clock.now + timedelta(seconds=call.timeout_s)
    clock.advance(call.timeout_s + 1)
    assert await tools_service.sweep() == []
    assert "timeout" not in [s["kind"] for s in await log_of(repo, call.run_id)]
    out = await tools_service.on_result(tool_result(call, "slow but fine"))
    assert isinstance(command_of(out), ReactStepRequested)


async def test_restart_resends_the_tool_call_with_its_key_and_keeps_the_budgets(
    tools_service: RunService,
    repo: RunStore,
    database_url: str,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    request = chat()
    first_plan = command_of(await routed(tools_service, Route.REACT, request))
    started = clock.now
    call = command_of(await tools_service.on_result(plan(first_plan, "weather", city="Oslo")))
    assert isinstance(call, ToolsCallRequested)
    await repo.close()  # the harness crashed

    clock.advance(settings.timeout_for(call.type) + 1)  # late while the harness was down
    second_repo = RunRepository(database_url)
    await second_repo.open()
    try:
        restarted = RunService(
            second_repo, settings, clock=clock, capabilities=with_tools("weather", "clock")
        )
        resent = command_of(await restarted.sweep())
        assert isinstance(resent, ToolsCallRequested)
        assert (resent.calls[0].idempotency_key, resent.attempt) == (
            call.calls[0].idempotency_key,
            1,
        )
        run = await load(second_repo, request.run_id)
        assert run.state.loop_started_at == started
        assert run.state.model_turns == 1
        assert run.state.call_counts == {'weather:{"city": "Oslo"}': 1}

        # the time budget still counts from before the crash
        clock.advance(60 - settings.timeout_for(call.type) - 1)
        out = await restarted.sweep()
        assert types(out) == ["run.completed", "turn.completed"]
        assert isinstance(out[0].event, RunCompleted)
        assert out[0].event.text.startswith("I had to stop: the time budget (60 s)")
    finally:
        await second_repo.close()
