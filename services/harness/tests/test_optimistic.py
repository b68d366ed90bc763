"""Results applied optimistically (PostgreSQL, `repository/pg_optimistic.py`): one statement
for a result on a run this process wrote last; a run changed behind the cache, a redelivered
event, and two results of one run at once come out as with a lock held throughout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from weir_common.events import (
    AnswerGenerateRequested,
    ChatRequested,
    MemoryContextRequested,
    RouteRequested,
    new_id,
)
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository
from weir_harness.repository import postgres as pg_repository
from weir_harness.repository.pg_optimistic import RunCache
from weir_harness.repository.pg_tx import _values
from weir_harness.service import RunService
from weir_harness.settings import HarnessSettings

from .test_service import (
    ManualClock,
    chat,
    command_of,
    failure_for,
    load,
    result_for,
    types,
)


class Statements:
    """The statements the store's connections send, as asyncpg's query logger sees them."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, record: Any) -> None:
        self.sent.append(" ".join(str(record.query).split())[:60])


@pytest.fixture
async def statements(monkeypatch: pytest.MonkeyPatch) -> Statements:
    seen = Statements()
    plain = pg_repository.init_connection

    async def logged(conn: asyncpg.Connection) -> None:
        await plain(conn)
        conn.add_query_logger(seen)

    monkeypatch.setattr(pg_repository, "init_connection", logged)
    return seen


@pytest.fixture
async def store(database_url: str, statements: Statements) -> AsyncIterator[RunRepository]:
    repository = RunRepository(database_url)
    await repository.open()
    try:
        yield repository
    finally:
        await repository.close()


def _service(store: RunRepository, settings: HarnessSettings, **changes: Any) -> RunService:
    return RunService(store, settings.model_copy(update=changes), clock=ManualClock())


async def test_a_result_on_a_run_written_here_takes_one_statement(
    store: RunRepository, settings: HarnessSettings, statements: Statements
) -> None:
    service = _service(store, settings)
    memory = command_of(await service.on_chat(chat(), None))
    statements.sent.clear()
    route = command_of(await service.on_result(result_for(memory)))
    assert isinstance(route, RouteRequested)
    assert len(statements.sent) == 1, statements.sent
    assert statements.sent[0].startswith("WITH guard AS")

    statements.sent.clear()
    generate = command_of(await service.on_result(result_for(route)))
    assert isinstance(generate, AnswerGenerateRequested)
    assert len(statements.sent) == 1, statements.sent
    run = await load(store, memory.run_id or "")
    assert (run.step, run.pending_event_id) == ("answer.generate.requested", generate.event_id)
    assert [s["kind"] for s in await store.steps(run.run_id)] == [
        "request", "command", "result", "command", "result", "command",
    ]  # fmt: skip


async def test_a_run_changed_behind_the_cache_is_decided_again_on_the_locked_run(
    store: RunRepository, settings: HarnessSettings, database_url: str
) -> None:
    service = _service(store, settings)
    memory = command_of(await service.on_chat(chat(), None))
    conn = await asyncpg.connect(database_url)
    try:  # another process wrote the run: its error column says so
        await conn.execute("UPDATE runs SET error = 'seen elsewhere' WHERE run_id = $1",
                           memory.run_id)  # fmt: skip
    finally:
        await conn.close()
    route = command_of(await service.on_result(result_for(memory)))
    assert isinstance(route, RouteRequested)
    run = await load(store, memory.run_id or "")
    assert run.error == "seen elsewhere"  # the decision was made on the run as it was
    assert run.pending_event_id == route.event_id
    assert [s["kind"] for s in await store.steps(run.run_id)] == [
        "request", "command", "result", "command",
    ]  # fmt: skip


async def test_a_failure_delivered_twice_counts_once(
    store: RunRepository, settings: HarnessSettings
) -> None:
    # a transient failure leaves the step pending (it is retried after a backoff): only the
    # event's dedupe tells its redelivery from a second failure
    service = _service(store, settings)
    memory = command_of(await service.on_chat(chat(), None))
    route = command_of(await service.on_result(result_for(memory)))
    failed = failure_for(route, transient=True)
    assert await service.on_result(failed) == []
    retry_at = (await load(store, route.run_id or "")).retry_at
    assert await service.on_result(failed) == []
    run = await load(store, route.run_id or "")
    assert (run.attempt, run.retry_at) == (1, retry_at)
    kinds = [s["kind"] for s in await store.steps(run.run_id)]
    assert kinds == ["request", "command", "result", "command", "result"]


async def test_results_of_one_run_at_once_are_both_applied(
    store: RunRepository, settings: HarnessSettings
) -> None:
    # the memory context and the route, asked together, answer together
    service = _service(store, settings, route_with_memory=True)
    for _ in range(5):
        started = await service.on_chat(chat(), None)
        memory, route = (item.event for item in started)
        assert isinstance(memory, MemoryContextRequested)
        assert isinstance(route, RouteRequested)
        outs = await asyncio.gather(
            service.on_result(result_for(memory)), service.on_result(result_for(route))
        )
        sent = [t for out in outs for t in types(out)]
        assert sent == ["answer.generate.requested"], sent
        run = await load(store, memory.run_id or "")
        assert run.state.route is not None
        assert run.state.context is not None
        assert run.step == "answer.generate.requested"


async def test_a_run_forgotten_after_it_was_cached_drops_its_late_result(
    store: RunRepository, settings: HarnessSettings
) -> None:
    service = _service(store, settings)
    memory = command_of(await service.on_chat(chat(), None))
    assert await store.forget_user("user-1") == 1
    assert await service.on_result(result_for(memory)) == []
    async with store.transaction() as tx:
        assert await tx.get(memory.run_id or "") is None


def _snapshot(status: RunStatus) -> tuple[Any, ...]:
    """A run's snapshot as a transaction writes it (JSON columns as text)."""
    request = ChatRequested(text="hi", reply_to="r", user_id="u", run_id=new_id())
    run = Run(run_id=request.run_id or "", conversation_id="c", user_id="u", status=status,
              request=request)  # fmt: skip
    return tuple(json.dumps(v) if isinstance(v, dict) else v for v in _values(run))


@pytest.mark.unit
def test_the_cache_keeps_running_runs_a_while_and_gives_each_once() -> None:
    cache = RunCache(size=2)
    running, ended = _snapshot(RunStatus.RUNNING), _snapshot(RunStatus.COMPLETED)
    cache.put({"a": (3, running), "b": (1, ended)})
    assert len(cache) == 1  # an ended run gets no more results
    assert cache.take("a") == (3, running)
    assert cache.take("a") is None  # taken: a second result at once reads the run
    cache.put({"a": (4, running), "c": (1, running), "d": (1, running)})
    assert cache.take("a") is None
    assert len(cache) == 2
