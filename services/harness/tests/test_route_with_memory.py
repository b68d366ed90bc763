"""The route asked together with the memory context (`route_with_memory`, the default).

The route reads only the message, so the first step sends both commands; the run moves on
once both answered, in whichever order, and each keeps its own retries and deadline. On the
in-memory store (unit tier); the restart case on PostgreSQL too.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from weir_common.events import (
    AnswerGenerateRequested,
    Intent,
    MemoryContextRequested,
    Route,
    RouteRequested,
    StepCommand,
)
from weir_harness.repository import RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings

from .test_service import (
    CONTEXT,
    TRACEPARENT,
    ManualClock,
    chat,
    failure_for,
    load,
    result_for,
    type_of,
    types,
)

STORES = ("memory",)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def parallel(settings: HarnessSettings) -> HarnessSettings:
    return settings.model_copy(update={"route_with_memory": True})


@pytest.fixture
def service(repo: RunStore, parallel: HarnessSettings, clock: ManualClock) -> RunService:
    return RunService(repo, parallel, clock=clock)


def commands(out: list[Outgoing]) -> list[StepCommand]:
    return [item.event for item in out if isinstance(item.event, StepCommand)]


async def start(service: RunService) -> tuple[MemoryContextRequested, RouteRequested, str]:
    request = chat()
    assert request.run_id is not None
    sent = commands(await service.on_chat(request, TRACEPARENT))
    assert [type_of(c) for c in sent] == ["memory.context.requested", "route.requested"]
    memory, route = sent
    assert isinstance(memory, MemoryContextRequested)
    assert isinstance(route, RouteRequested)
    assert route.query == request.text
    assert route.envelope() == memory.envelope() == request.envelope()
    return memory, route, request.run_id


@pytest.mark.stores("memory", "postgres")
async def test_route_first_then_memory_goes_straight_to_the_answer(
    service: RunService, repo: RunStore
) -> None:
    memory, route, run_id = await start(service)

    assert await service.on_result(result_for(route)) == []  # kept until memory answers
    waiting = await load(repo, run_id)
    assert (waiting.step, waiting.pending_event_id) == (
        "memory.context.requested",
        memory.event_id,
    )
    assert (waiting.state.route, waiting.state.route_sent) == (Route.PLAIN_CHAT, None)

    generate = commands(await service.on_result(result_for(memory)))
    assert [type_of(c) for c in generate] == ["answer.generate.requested"]
    assert isinstance(generate[0], AnswerGenerateRequested)
    assert generate[0].context == CONTEXT
    assert (generate[0].intent, generate[0].route) == (Intent.CHAT, Route.PLAIN_CHAT)

    log = [(s["kind"], s["step"]) for s in await repo.steps(run_id)]
    assert log == [
        ("request", "chat.requested"),
        ("command", "memory.context.requested"),
        ("command", "route.requested"),
        ("result", "route.requested"),
        ("result", "memory.context.requested"),
        ("command", "answer.generate.requested"),
    ]


async def test_memory_first_waits_for_the_route_already_sent(
    service: RunService, repo: RunStore, clock: ManualClock, parallel: HarnessSettings
) -> None:
    memory, route, run_id = await start(service)
    clock.advance(2)

    assert await service.on_result(result_for(memory)) == []  # the route is on its way
    waiting = await load(repo, run_id)
    assert (waiting.step, waiting.pending_event_id, waiting.attempt) == (
        "route.requested",
        route.event_id,
        1,
    )
    assert waiting.deadline == clock.now + timedelta(
        seconds=parallel.timeout_for("route.requested")
    )
    assert waiting.state.route_sent is None

    following = commands(await service.on_result(result_for(route, Route.PLAIN_CHAT)))
    assert [type_of(c) for c in following] == ["answer.generate.requested"]


async def test_a_route_that_failed_early_is_asked_again_after_memory(
    service: RunService, repo: RunStore
) -> None:
    memory, route, run_id = await start(service)

    assert await service.on_result(failure_for(route, transient=True)) == []
    assert (await load(repo, run_id)).state.route_sent is None

    again = commands(await service.on_result(result_for(memory)))
    assert [type_of(c) for c in again] == ["route.requested"]
    assert again[0].event_id != route.event_id
    following = commands(await service.on_result(result_for(again[0])))
    assert [type_of(c) for c in following] == ["answer.generate.requested"]


async def test_a_retried_memory_step_does_not_ask_for_the_route_twice(
    service: RunService, repo: RunStore, clock: ManualClock, parallel: HarnessSettings
) -> None:
    memory, route, _ = await start(service)

    clock.advance(parallel.step_timeout_s + 1)
    await service.sweep()  # the memory step's deadline passed: a transient failure
    clock.advance(parallel.backoff_base_s + 0.1)
    retried = commands(await service.sweep())
    assert [type_of(c) for c in retried] == ["memory.context.requested"]
    assert retried[0].attempt == 2

    assert await service.on_result(result_for(route)) == []
    following = commands(await service.on_result(result_for(retried[0])))
    assert [type_of(c) for c in following] == ["answer.generate.requested"]
    assert types(await service.on_result(result_for(memory))) == []  # the first one, late


async def test_a_late_route_after_its_run_moved_on_is_stale(
    service: RunService, repo: RunStore
) -> None:
    memory, route, run_id = await start(service)
    await service.on_result(result_for(memory))  # the route becomes the pending step
    await service.on_result(result_for(route))
    before = await load(repo, run_id)

    assert await service.on_result(result_for(route).model_copy(update={"event_id": "x"})) == []
    after = await load(repo, run_id)
    assert (after.step, after.pending_event_id) == (before.step, before.pending_event_id)


@pytest.mark.stores("memory", "postgres")
async def test_a_restarted_harness_finishes_a_run_whose_route_came_first(
    service: RunService,
    second_repo: RunStore,
    parallel: HarnessSettings,
    clock: ManualClock,
) -> None:
    memory, route, _ = await start(service)
    await service.on_result(result_for(route))

    restarted = RunService(second_repo, parallel, clock=clock)
    following = commands(await restarted.on_result(result_for(memory)))
    assert [type_of(c) for c in following] == ["answer.generate.requested"]


async def test_a_route_answering_a_run_that_failed_meanwhile_is_stale(
    service: RunService, repo: RunStore
) -> None:
    memory, route, run_id = await start(service)
    out = await service.on_result(failure_for(memory, transient=False))
    assert types(out) == ["run.failed"]

    assert await service.on_result(result_for(route)) == []
    failed = await load(repo, run_id)
    assert failed.state.route is None  # not folded into the closed run
    logged = [(s["kind"], s["step"]) for s in await repo.steps(run_id)]
    assert ("result", "route.requested") not in logged
