"""The run state machine against the run store, with an injected clock (nothing sleeps).

In the unit tier against the in-memory store; the tests marked `stores` and those that read
PostgreSQL themselves also against a real PostgreSQL (integration tier). Each test gets its
own database; the workers are played by the test, which answers each
command with the result a worker would send (`request_id` = the command's `event_id`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
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
    Route,
    RouteDecided,
    RouteRequested,
    RunCompleted,
    RunFailed,
    StepCommand,
    StepFailed,
    ToolInfo,
    ToolsCatalogUpdated,
    Turn,
    TurnCompleted,
    TurnRecorded,
    new_id,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository, RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings

STORES = ("memory",)  # and PostgreSQL for the tests marked `stores` (conftest)

REPLY_TO = "weir.reply.harness-tests"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
KB_ON = "Knowledge base: connected."
KB_OFF = "Knowledge base: not connected."
NO_TOOLS = "Tools: none connected."
KB_WARNING = "The knowledge base is not connected"
TOOLS_WARNING = "No tools are connected"
CONTEXT = MemoryContext(
    history=[Turn(run_id="earlier", user="hi", assistant="hello there")],
    summary="a greeting",
    facts=["the user likes tea"],
)


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


@pytest.fixture
def service(repo: RunStore, settings: HarnessSettings, clock: ManualClock) -> RunService:
    return RunService(repo, settings, clock=clock)


# --- helpers ---------------------------------------------------------------------------------


def with_tools(*names: str) -> Capabilities:
    caps = Capabilities()
    caps.update(ToolsCatalogUpdated(tools=[ToolInfo(name=n, server="builtin") for n in names]))
    return caps


def chat(
    conversation_id: str | None = None, text: str = "what is weir?", **kw: Any
) -> ChatRequested:
    return ChatRequested(
        text=text,
        reply_to=REPLY_TO,
        run_id=kw.pop("run_id", new_id()),
        conversation_id=conversation_id or new_id(),
        user_id="user-1",
        **kw,
    )


def events(out: list[Outgoing]) -> list[Event]:
    return [item.event for item in out]


def type_of(event: Event) -> str:
    return str(event.model_dump(include={"type"})["type"])


def types(out: list[Outgoing]) -> list[str]:
    return [type_of(item.event) for item in out]


def command_of(out: list[Outgoing]) -> StepCommand:
    """The single step command in `out`."""
    commands = [item.event for item in out if isinstance(item.event, StepCommand)]
    assert len(commands) == 1, f"expected one command, got {types(out)}"
    return commands[0]


def result_for(command: StepCommand, route: Route = Route.PLAIN_CHAT) -> HarnessResult:
    """The result a worker sends for `command`."""
    envelope = command.envelope()
    request_id = command.event_id
    if isinstance(command, MemoryContextRequested):
        return MemoryContextReady(context=CONTEXT, request_id=request_id, **envelope)
    if isinstance(command, RouteRequested):
        intent = Intent.CHAT if route is Route.PLAIN_CHAT else Intent.KNOWLEDGE
        return RouteDecided(
            intent=intent, route=route, rule="test-rule", request_id=request_id, **envelope
        )
    if isinstance(command, AnswerGenerateRequested):
        return AnswerGenerated(
            text="weir is an agent platform",
            model="scripted",
            prompt_tokens=12,
            completion_tokens=5,
            request_id=request_id,
            **envelope,
        )
    if isinstance(command, TurnCompleted):
        return TurnRecorded(request_id=request_id, **envelope)
    raise AssertionError(f"no worker for {type_of(command)}")


def failure_for(command: StepCommand, *, transient: bool, reason: str = "boom") -> StepFailed:
    return StepFailed(
        step=type_of(command),
        reason=reason,
        transient=transient,
        request_id=command.event_id,
        **command.envelope(),
    )


async def load(repo: RunStore, run_id: str) -> Run:
    async with repo.transaction() as tx:
        run = await tx.get(run_id)
    assert run is not None
    return run


async def advance_to(
    service: RunService, first: list[Outgoing], step: str, route: Route = Route.PLAIN_CHAT
) -> StepCommand:
    """Answer commands from `first` on until the command of `step` goes out; return it."""
    command = command_of(first)
    while type_of(command) != step:
        command = command_of(await service.on_result(result_for(command, route)))
    return command


async def finish(service: RunService, command: StepCommand) -> list[Outgoing]:
    """Answer every command until the run is done; the outgoing of the last result."""
    while True:
        out = await service.on_result(result_for(command))
        following = [item for item in out if isinstance(item.event, StepCommand)]
        if not following or following[0].event.run_id != command.run_id:
            return out
        assert isinstance(following[0].event, StepCommand)
        command = following[0].event


# --- the plain-chat route ----------------------------------------------------------------------


@pytest.mark.stores("memory", "postgres")
async def test_plain_chat_run_walks_every_step(service: RunService, repo: RunStore) -> None:
    request = chat()
    run_id = request.run_id
    assert run_id is not None

    out = await service.on_chat(request, TRACEPARENT)
    memory = command_of(out)
    assert isinstance(memory, MemoryContextRequested)
    assert (memory.query, memory.attempt, memory.private) == ("what is weir?", 1, False)
    assert memory.envelope() == request.envelope()
    assert out[0].topic is None
    assert out[0].traceparent == TRACEPARENT
    assert (await load(repo, run_id)).status is RunStatus.RUNNING

    out = await service.on_result(result_for(memory))
    route = command_of(out)
    assert isinstance(route, RouteRequested)
    assert route.query == "what is weir?"
    assert route.envelope() == request.envelope()

    out = await service.on_result(result_for(route))
    generate = command_of(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.context == CONTEXT
    assert generate.intent is Intent.CHAT
    assert generate.route is Route.PLAIN_CHAT
    assert generate.reply_to == REPLY_TO
    assert generate.capability_notes == [KB_OFF, NO_TOOLS]
    assert (generate.evidence, generate.observations) == ([], [])

    out = await service.on_result(result_for(generate))
    assert types(out) == ["run.completed", "turn.completed"]
    completed, turn = out
    assert isinstance(completed.event, RunCompleted)
    assert completed.topic == REPLY_TO
    assert completed.traceparent == TRACEPARENT
    assert completed.event.text == "weir is an agent platform"
    assert (completed.event.intent, completed.event.route) == ("chat", "plain_chat")
    assert completed.event.offline is False
    assert completed.event.envelope() == request.envelope()
    assert isinstance(turn.event, TurnCompleted)
    assert turn.topic is None
    assert turn.event.user_text == "what is weir?"
    assert turn.event.assistant_text == "weir is an agent platform"
    finishing = await load(repo, run_id)
    assert finishing.status is RunStatus.FINISHING
    assert finishing.state.answer == "weir is an agent platform"
    assert finishing.state.model == "scripted"
    assert (finishing.state.prompt_tokens, finishing.state.completion_tokens) == (12, 5)

    out = await service.on_result(result_for(turn.event))
    assert out == []
    done = await load(repo, run_id)
    assert done.status is RunStatus.COMPLETED
    assert (done.pending_event_id, done.deadline, done.retry_at) == (None, None, None)
    assert done.state.context == CONTEXT
    assert done.state.rule == "test-rule"
    assert (done.state.model_turns, done.state.tool_calls) == (1, 0)
    assert done.state.loop_started_at is None

    log = await repo.steps(run_id)
    assert [(s["kind"], s["step"]) for s in log] == [
        ("request", "chat.requested"),
        ("command", "memory.context.requested"),
        ("result", "memory.context.requested"),
        ("command", "route.requested"),
        ("result", "route.requested"),
        ("command", "answer.generate.requested"),
        ("result", "answer.generate.requested"),
        ("command", "turn.completed"),
        ("result", "turn.completed"),
    ]
    assert [s["seq"] for s in log] == list(range(1, 10))
    assert log[0]["event_id"] == request.event_id
    command_ids = [memory.event_id, route.event_id, generate.event_id, turn.event.event_id]
    assert [s["event_id"] for s in log if s["kind"] == "command"] == command_ids
    results = [s for s in log if s["kind"] == "result"]
    assert [s["payload"]["request_id"] for s in results] == command_ids
    assert results[0]["payload"]["type"] == "memory.context.ready"


@pytest.mark.parametrize(
    ("route", "capabilities", "expected"),
    [
        (Route.PLAIN_CHAT, Capabilities(), [KB_OFF, NO_TOOLS]),
        (Route.PLAIN_CHAT, Capabilities(rag=True), [KB_ON, NO_TOOLS]),
        (Route.RAG, Capabilities(), [KB_OFF, NO_TOOLS, KB_WARNING]),
        (Route.RAG, with_tools("clock"), [KB_OFF, "Tools: clock.", KB_WARNING]),
        (Route.SINGLE_TOOL, Capabilities(), [KB_OFF, NO_TOOLS, TOOLS_WARNING]),
        (Route.SINGLE_TOOL, Capabilities(rag=True), [KB_ON, NO_TOOLS, TOOLS_WARNING]),
        (Route.REACT, Capabilities(), [KB_OFF, NO_TOOLS, TOOLS_WARNING]),
    ],
)
async def test_route_without_its_capability_goes_straight_to_generation(
    repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
    route: Route,
    capabilities: Capabilities,
    expected: list[str],
) -> None:
    service = RunService(repo, settings, clock=clock, capabilities=capabilities)
    out = await service.on_chat(chat(), None)
    route_command = await advance_to(service, out, "route.requested")
    generate = command_of(await service.on_result(result_for(route_command, route)))
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.context == CONTEXT
    assert generate.route is route
    assert len(generate.capability_notes) == len(expected), generate.capability_notes
    for note, fragment in zip(generate.capability_notes, expected, strict=True):
        assert fragment in note
    run = await load(repo, generate.run_id or "")
    assert run.state.loop_started_at is None
    assert run.state.model_turns == 1


async def test_private_request_stays_private_in_memory_commands(service: RunService) -> None:
    out = await service.on_chat(chat(private=True), None)
    memory = command_of(out)
    assert isinstance(memory, MemoryContextRequested)
    assert memory.private is True
    turn = await advance_to(service, out, "turn.completed")
    assert isinstance(turn, TurnCompleted)
    assert turn.private is True


async def test_request_without_ids_gets_them_on_every_command(
    service: RunService, repo: RunStore
) -> None:
    """A requester may leave run_id/conversation_id out; the run's own ids route the results."""
    request = ChatRequested(text="hello", reply_to=REPLY_TO)
    memory = command_of(await service.on_chat(request, None))
    assert memory.run_id == request.event_id
    assert memory.conversation_id == request.event_id
    out = await finish(service, memory)
    assert out == []
    assert (await load(repo, request.event_id)).status is RunStatus.COMPLETED


# --- the outbox --------------------------------------------------------------------------------


async def outbox(database_url: str) -> list[tuple[str, str | None, str | None]]:
    """The outbox rows in id order: (event id, topic, traceparent)."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT event, topic, traceparent FROM outbox ORDER BY id")
    finally:
        await conn.close()
    return [(json.loads(r["event"])["event_id"], r["topic"], r["traceparent"]) for r in rows]


async def test_every_decided_event_is_written_to_the_outbox_with_the_run(
    service: RunService, database_url: str
) -> None:
    decided = await service.on_chat(chat(), TRACEPARENT)
    out = decided
    while any(isinstance(item.event, StepCommand) for item in out):
        out = await service.on_result(result_for(command_of(out)))
        decided += out
    assert "run.completed" in types(decided)
    assert await outbox(database_url) == [
        (item.event.event_id, item.topic, TRACEPARENT) for item in decided
    ]


async def test_a_redelivered_request_writes_nothing_more_to_the_outbox(
    service: RunService, database_url: str
) -> None:
    request = chat()
    await service.on_chat(request, None)
    assert await service.on_chat(request, None) == []
    assert len(await outbox(database_url)) == 1


# --- idempotency -------------------------------------------------------------------------------


async def test_same_chat_request_twice_opens_one_run(service: RunService, repo: RunStore) -> None:
    request = chat()
    assert request.run_id is not None
    first = await service.on_chat(request, None)
    assert len(first) == 1
    assert await service.on_chat(request, None) == []
    # the same run asked for under a new event id (a re-published request) opens nothing either
    again = request.model_copy(update={"event_id": new_id()})
    assert await service.on_chat(again, None) == []
    log = await repo.steps(request.run_id)
    assert [s["kind"] for s in log] == ["request", "command"]


@pytest.mark.stores("memory", "postgres")
async def test_same_result_twice_advances_once(service: RunService, repo: RunStore) -> None:
    memory = command_of(await service.on_chat(chat(), None))
    result = result_for(memory)
    route = command_of(await service.on_result(result))
    assert await service.on_result(result) == []
    run = await load(repo, memory.run_id or "")
    assert run.step == "route.requested"
    assert run.pending_event_id == route.event_id
    assert [s["kind"] for s in await repo.steps(run.run_id)] == [
        "request",
        "command",
        "result",
        "command",
    ]


async def test_stale_result_is_ignored(
    service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    first = command_of(await service.on_chat(chat(), None))
    assert await service.on_result(failure_for(first, transient=True)) == []
    clock.advance(0.5)
    second = command_of(await service.sweep())
    assert second.attempt == 2
    # the answer to the first attempt arrives late: it is not the pending command's
    assert await service.on_result(result_for(first)) == []
    # nor is a result naming a command that was never sent
    stranger = MemoryContextReady(context=CONTEXT, request_id=new_id(), **first.envelope())
    assert await service.on_result(stranger) == []
    run = await load(repo, first.run_id or "")
    assert (run.step, run.attempt, run.pending_event_id) == (
        "memory.context.requested",
        2,
        second.event_id,
    )
    # the answer to the current attempt moves on
    assert isinstance(command_of(await service.on_result(result_for(second))), RouteRequested)


async def test_result_of_unknown_or_finished_run_is_ignored(service: RunService) -> None:
    memory = command_of(await service.on_chat(chat(), None))
    unknown = MemoryContextReady(
        context=CONTEXT, request_id=memory.event_id, run_id=new_id(), conversation_id="c"
    )
    assert await service.on_result(unknown) == []
    turn = await advance_to(service, [Outgoing(memory)], "turn.completed")
    assert await service.on_result(result_for(turn)) == []
    # a redelivered TurnRecorded under a new event id finds no pending command
    late = TurnRecorded(request_id=turn.event_id, **turn.envelope())
    assert await service.on_result(late) == []


# --- serialization per conversation ------------------------------------------------------------


@pytest.mark.stores("memory", "postgres")
async def test_second_request_of_a_conversation_waits_for_the_first(
    service: RunService, repo: RunStore
) -> None:
    conversation = new_id()
    first, second = chat(conversation, "one"), chat(conversation, "two")
    assert first.run_id
    assert second.run_id
    memory = command_of(await service.on_chat(first, None))
    assert await service.on_chat(second, None) == []
    waiting = await load(repo, second.run_id)
    assert waiting.status is RunStatus.QUEUED
    assert waiting.pending_event_id is None

    generate = await advance_to(service, [Outgoing(memory)], "answer.generate.requested")
    out = await service.on_result(result_for(generate))
    assert types(out) == ["run.completed", "turn.completed"]
    assert (await load(repo, second.run_id)).status is RunStatus.QUEUED  # first is finishing

    turn = out[1].event
    assert isinstance(turn, TurnCompleted)
    out = await service.on_result(result_for(turn))
    started = command_of(out)
    assert isinstance(started, MemoryContextRequested)
    assert started.run_id == second.run_id
    assert started.query == "two"
    assert (await load(repo, first.run_id)).status is RunStatus.COMPLETED
    assert (await load(repo, second.run_id)).status is RunStatus.RUNNING
    assert await finish(service, started) == []
    assert (await load(repo, second.run_id)).status is RunStatus.COMPLETED


async def test_queued_runs_start_in_arrival_order(service: RunService) -> None:
    conversation = new_id()
    requests = [chat(conversation, f"message {i}") for i in range(3)]
    command = command_of(await service.on_chat(requests[0], None))
    for request in requests[1:]:
        assert await service.on_chat(request, None) == []
    started = [command.run_id]
    for _ in requests[1:]:
        out = await finish(service, command)
        command = command_of(out)
        started.append(command.run_id)
    assert started == [r.run_id for r in requests]
    assert await finish(service, command) == []


async def test_other_conversations_run_at_once(service: RunService) -> None:
    first = command_of(await service.on_chat(chat(), None))
    second = command_of(await service.on_chat(chat(), None))
    assert first.run_id != second.run_id
    assert first.conversation_id != second.conversation_id
    # both advance independently
    assert isinstance(command_of(await service.on_result(result_for(second))), RouteRequested)
    assert isinstance(command_of(await service.on_result(result_for(first))), RouteRequested)


# --- retries -----------------------------------------------------------------------------------


@pytest.mark.stores("memory", "postgres")
async def test_transient_failure_retries_after_backoff(
    service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    memory = command_of(await service.on_chat(chat(), TRACEPARENT))
    route = command_of(await service.on_result(result_for(memory)))

    assert await service.on_result(failure_for(route, transient=True, reason="router busy")) == []
    run = await load(repo, route.run_id or "")
    assert run.retry_at == clock.now + timedelta(seconds=0.5)
    assert run.deadline is None
    assert run.error == "router busy"
    assert await service.sweep() == []
    clock.advance(0.49)
    assert await service.sweep() == []

    clock.advance(0.01)
    out = await service.sweep()
    retry = command_of(out)
    assert isinstance(retry, RouteRequested)
    assert retry.attempt == 2
    assert retry.event_id != route.event_id
    assert isinstance(route, RouteRequested)
    assert retry.query == route.query
    assert retry.envelope() == route.envelope()
    assert out[0].traceparent == TRACEPARENT
    assert await service.sweep() == []  # sent once

    # the second failure waits twice as long
    assert await service.on_result(failure_for(retry, transient=True)) == []
    clock.advance(0.99)
    assert await service.sweep() == []
    clock.advance(0.01)
    third = command_of(await service.sweep())
    assert (type_of(third), third.attempt) == ("route.requested", 3)
    assert isinstance(
        command_of(await service.on_result(result_for(third))), AnswerGenerateRequested
    )

    log = await repo.steps(route.run_id or "")
    assert [(s["kind"], s["step"], s["attempt"]) for s in log[3:]] == [
        ("command", "route.requested", 1),
        ("result", "route.requested", 1),
        ("command", "route.requested", 2),
        ("result", "route.requested", 2),
        ("command", "route.requested", 3),
        ("result", "route.requested", 3),
        ("command", "answer.generate.requested", 1),
    ]
    assert log[4]["payload"]["type"] == "step.failed"


async def test_exhausted_retries_fail_the_run_and_start_the_next(
    service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    conversation = new_id()
    first, second = chat(conversation), chat(conversation, "next")
    command = command_of(await service.on_chat(first, TRACEPARENT))
    assert await service.on_chat(second, None) == []

    for attempt in range(1, settings.max_attempts):
        assert command.attempt == attempt
        assert await service.on_result(failure_for(command, transient=True)) == []
        clock.advance(60)
        command = command_of(await service.sweep())
    assert command.attempt == settings.max_attempts

    out = await service.on_result(failure_for(command, transient=True, reason="memory down"))
    assert types(out) == ["run.failed", "memory.context.requested"]
    failed = out[0]
    assert isinstance(failed.event, RunFailed)
    assert failed.topic == REPLY_TO
    assert failed.traceparent == TRACEPARENT
    assert failed.event.code == "step_failed"
    assert "memory.context.requested" in failed.event.reason
    assert "memory down" in failed.event.reason
    assert failed.event.envelope() == first.envelope()
    assert out[1].event.run_id == second.run_id
    run = await load(repo, first.run_id or "")
    assert run.status is RunStatus.FAILED
    assert run.error == failed.event.reason
    assert (run.pending_event_id, run.retry_at, run.deadline) == (None, None, None)
    assert (await load(repo, second.run_id or "")).status is RunStatus.RUNNING
    clock.advance(3600)
    assert await service.sweep() == []  # the failed run is not retried


async def test_permanent_failure_fails_at_once(
    service: RunService, repo: RunStore, clock: ManualClock
) -> None:
    generate = await advance_to(
        service, await service.on_chat(chat(), None), "answer.generate.requested"
    )
    out = await service.on_result(failure_for(generate, transient=False, reason="bad request"))
    assert types(out) == ["run.failed"]
    assert out[0].topic == REPLY_TO
    assert isinstance(out[0].event, RunFailed)
    assert "bad request" in out[0].event.reason
    assert "1 attempt" in out[0].event.reason
    assert (await load(repo, generate.run_id or "")).status is RunStatus.FAILED
    clock.advance(3600)
    assert await service.sweep() == []


async def test_failure_after_the_answer_sends_no_run_failed(
    service: RunService, repo: RunStore
) -> None:
    """The requester already has RunCompleted; a turn memory could not store ends the run."""
    conversation = new_id()
    first, second = chat(conversation), chat(conversation)
    turn = await advance_to(service, await service.on_chat(first, None), "turn.completed")
    assert await service.on_chat(second, None) == []
    out = await service.on_result(failure_for(turn, transient=False))
    assert types(out) == ["memory.context.requested"]
    assert out[0].event.run_id == second.run_id
    assert (await load(repo, first.run_id or "")).status is RunStatus.FAILED


# --- deadlines ---------------------------------------------------------------------------------


async def test_missing_result_is_retried_after_the_deadline(
    service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    memory = command_of(await service.on_chat(chat(), None))
    run_id = memory.run_id or ""
    assert (await load(repo, run_id)).deadline == clock.now + timedelta(
        seconds=settings.step_timeout_s
    )
    clock.advance(settings.step_timeout_s - 0.1)
    assert await service.sweep() == []
    assert [s["kind"] for s in await repo.steps(run_id)] == ["request", "command"]

    clock.advance(0.1)
    assert await service.sweep() == []  # the timeout counts as a transient failure
    log = await repo.steps(run_id)
    assert [s["kind"] for s in log] == ["request", "command", "timeout"]
    assert log[-1]["event_id"] == memory.event_id
    assert log[-1]["step"] == "memory.context.requested"
    run = await load(repo, run_id)
    assert run.deadline is None
    assert run.retry_at == clock.now + timedelta(seconds=settings.backoff_base_s)
    assert "in time" in (run.error or "")

    clock.advance(settings.backoff_base_s)
    retry = command_of(await service.sweep())
    assert isinstance(retry, MemoryContextRequested)
    assert retry.attempt == 2
    assert retry.event_id != memory.event_id
    # the retried command's answer moves the run on
    assert isinstance(command_of(await service.on_result(result_for(retry))), RouteRequested)


async def test_generation_has_the_longer_deadline(
    service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    generate = await advance_to(
        service, await service.on_chat(chat(), None), "answer.generate.requested"
    )
    run_id = generate.run_id or ""
    assert (await load(repo, run_id)).deadline == clock.now + timedelta(
        seconds=settings.generate_timeout_s
    )
    clock.advance(settings.step_timeout_s + 1)
    assert await service.sweep() == []
    assert "timeout" not in [s["kind"] for s in await repo.steps(run_id)]
    clock.advance(settings.generate_timeout_s - settings.step_timeout_s - 1)
    assert await service.sweep() == []
    assert [s["kind"] for s in await repo.steps(run_id)][-1] == "timeout"
    clock.advance(settings.backoff_base_s)
    retry = command_of(await service.sweep())
    assert (type_of(retry), retry.attempt) == ("answer.generate.requested", 2)


async def test_deadline_passing_every_attempt_fails_the_run(
    service: RunService, repo: RunStore, clock: ManualClock, settings: HarnessSettings
) -> None:
    command = command_of(await service.on_chat(chat(), None))
    for _ in range(1, settings.max_attempts):
        clock.advance(settings.step_timeout_s)
        assert await service.sweep() == []
        clock.advance(60)
        command = command_of(await service.sweep())
    clock.advance(settings.step_timeout_s)
    out = await service.sweep()
    assert types(out) == ["run.failed"]
    assert isinstance(out[0].event, RunFailed)
    assert "in time" in out[0].event.reason
    assert out[0].topic == REPLY_TO
    run = await load(repo, command.run_id or "")
    assert run.status is RunStatus.FAILED
    kinds = [s["kind"] for s in await repo.steps(run.run_id)]
    assert kinds.count("timeout") == settings.max_attempts
    assert kinds.count("command") == settings.max_attempts


# --- restart -----------------------------------------------------------------------------------


async def test_a_restart_resends_nothing_that_is_not_late(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    command_of(await service.on_chat(chat(), None))
    await repo.close()  # the harness crashed
    clock.advance(1)  # and came back well before any deadline
    restarted = RunService(second_repo, settings, clock)
    assert await restarted.sweep() == []


async def test_a_deployment_sweeps_only_its_own_runs_of_a_shared_database(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    database_url: str,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    other = RunRepository(database_url, "other.")  # another topic prefix, the same database
    await other.open()
    try:
        theirs = RunService(other, settings, clock)
        command_of(await theirs.on_chat(chat(), None))
        mine = command_of(await service.on_chat(chat(), None))
        await repo.close()  # the harness crashed
        clock.advance(600)  # and both runs are late when it is back
        restarted = RunService(second_repo, settings, clock)
        assert [item.event.run_id for item in await restarted.sweep()] == [mine.run_id]
    finally:
        await other.close()


@pytest.mark.stores("memory", "postgres")
async def test_a_restart_resends_commands_late_while_it_was_down_without_spending_attempts(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    conversation = new_id()
    busy, queued = chat(conversation), chat(conversation)
    memory = command_of(await service.on_chat(busy, TRACEPARENT))
    route = command_of(await service.on_result(result_for(memory)))
    assert await service.on_chat(queued, None) == []
    other = await advance_to(
        service, await service.on_chat(chat(), None), "answer.generate.requested"
    )
    done = chat()
    assert await finish(service, command_of(await service.on_chat(done, None))) == []
    await repo.close()  # the harness crashed

    clock.advance(600)  # down past every deadline
    restarted = RunService(second_repo, settings, clock)
    out = await restarted.sweep()
    resent = {item.event.run_id: item for item in out}
    assert set(resent) == {busy.run_id, other.run_id}
    again = resent[busy.run_id]
    assert isinstance(again.event, RouteRequested)
    assert again.event.event_id != route.event_id
    assert again.event.attempt == route.attempt  # the silence was no failure of the step
    assert again.traceparent == TRACEPARENT
    assert isinstance(resent[other.run_id].event, AnswerGenerateRequested)
    assert await restarted.sweep() == []
    assert (await load(second_repo, other.run_id or "")).state.model_turns == 1

    # the re-sent command is now the pending one; the run goes on to the end
    assert await restarted.on_result(result_for(route)) == []  # pre-crash send: stale
    out = await finish(restarted, again.event)
    assert command_of(out).run_id == queued.run_id
    assert (await load(second_repo, busy.run_id or "")).status is RunStatus.COMPLETED
    assert (await load(second_repo, queued.run_id or "")).status is RunStatus.RUNNING
    assert (await load(second_repo, done.run_id or "")).status is RunStatus.COMPLETED
    kinds = [s["kind"] for s in await second_repo.steps(busy.run_id or "")]
    assert "resend" in kinds
    assert "timeout" not in kinds


async def test_restart_does_not_spend_the_last_attempt(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    """A command on its last attempt, late while the harness was down, is re-sent, not failed."""
    command = command_of(await service.on_chat(chat(), None))
    for _ in range(1, settings.max_attempts):
        assert await service.on_result(failure_for(command, transient=True)) == []
        clock.advance(60)
        command = command_of(await service.sweep())
    assert command.attempt == settings.max_attempts
    await repo.close()

    clock.advance(600)
    restarted = RunService(second_repo, settings, clock)
    resent = command_of(await restarted.sweep())
    assert isinstance(resent, MemoryContextRequested)
    assert resent.attempt == settings.max_attempts
    assert isinstance(command_of(await restarted.on_result(result_for(resent))), RouteRequested)


async def test_restart_keeps_scheduled_retries_on_their_backoff(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    command = command_of(await service.on_chat(chat(), None))
    assert await service.on_result(failure_for(command, transient=True)) == []
    await repo.close()
    restarted = RunService(second_repo, settings, clock)
    assert await restarted.sweep() == []
    clock.advance(settings.backoff_base_s)
    retry = command_of(await restarted.sweep())
    assert retry.attempt == 2


async def test_a_deadline_passed_while_the_harness_runs_spends_an_attempt(
    service: RunService, settings: HarnessSettings, clock: ManualClock
) -> None:
    first = command_of(await service.on_chat(chat(), None))
    clock.advance(settings.timeout_for("memory.context.requested") + 1)
    assert await service.sweep() == []  # a failed attempt: retried after its backoff
    clock.advance(settings.backoff_base_s)
    retry = command_of(await service.sweep())
    assert (retry.run_id, retry.attempt) == (first.run_id, 2)


# --- forget me ---------------------------------------------------------------------------------


async def test_forgetting_a_user_deletes_their_runs_and_a_late_result_is_dropped(
    service: RunService, repo: RunStore, database_url: str
) -> None:
    mine = command_of(await service.on_chat(chat(), None))
    other = chat().model_copy(update={"user_id": "user-2"})
    theirs = command_of(await service.on_chat(other, None))
    assert {mine.event_id, theirs.event_id} <= {e for e, _, _ in await outbox(database_url)}

    assert await repo.forget_user("user-1") == 1
    unpublished = {e for e, _, _ in await outbox(database_url)}
    assert mine.event_id not in unpublished, "the user's unpublished commands are gone"
    assert theirs.event_id in unpublished
    assert await repo.record(mine.run_id or "") is None
    assert await repo.steps(mine.run_id or "") == []
    assert await repo.record(theirs.run_id or "") is not None
    assert await service.on_result(result_for(mine)) == []  # nothing left to advance
    assert await repo.forget_user("user-1") == 0


async def _finish(service: RunService, request: ChatRequested) -> None:
    out = await service.on_chat(request, None)
    while True:
        commands = [item.event for item in out if isinstance(item.event, StepCommand)]
        if not commands:
            return
        out = await service.on_result(result_for(commands[0]))


async def test_a_private_run_keeps_no_text_past_its_retention(
    service: RunService, repo: RunStore, database_url: str
) -> None:
    secret, shared = chat(private=True, text="my secret diagnosis"), chat(text="an open question")
    await _finish(service, secret)
    await _finish(service, shared)
    assert await repo.scrub_private(retention_s=3600) == 0  # both ended just now
    assert await repo.scrub_private(retention_s=0) == 1
    assert await repo.scrub_private(retention_s=0) == 0  # scrubbed once
    conn = await asyncpg.connect(database_url)
    try:
        rows = {r["run_id"]: r for r in await conn.fetch("SELECT run_id, request::text AS request,"
                " state::text AS state, status FROM runs")}  # fmt: skip
        steps = await conn.fetch("SELECT run_id, payload::text AS payload FROM run_steps")
    finally:
        await conn.close()
    scrubbed, kept = rows[secret.run_id], rows[shared.run_id]
    assert scrubbed["status"] == kept["status"] == "completed"
    for text in (scrubbed["request"], scrubbed["state"]):
        assert "secret" not in text
        assert "agent platform" not in text  # the answer
    state = json.loads(scrubbed["state"])
    assert set(state) <= {"route", "intent", "offline"}
    assert state["route"] == "plain_chat"
    assert not [s for s in steps if s["run_id"] == secret.run_id and "secret" in s["payload"]]
    assert "an open question" in kept["request"]
    assert [s for s in steps if s["run_id"] == shared.run_id and "open question" in s["payload"]]
