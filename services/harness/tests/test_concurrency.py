"""Runs of one conversation when a request and the end of the previous run race.

The request (`chat.requested` subscriber) and the result that closes the previous run (the
results subscriber) are handled concurrently. Whatever the interleaving of their two
transactions, the new run must start exactly once: queued behind a run that is closing at
that moment, it must not be left queued with nobody to start it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import pytest

from weir_common.events import (
    AnswerGenerated,
    ChatRequested,
    Intent,
    MemoryContext,
    MemoryContextReady,
    MemoryContextRequested,
    Route,
    RouteDecided,
    StepCommand,
    TurnCompleted,
    TurnRecorded,
    new_id,
)
from weir_common.topics import Topics
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository, RunTx
from weir_harness.repository.pg_optimistic import OptimisticRunTx, RunCache
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings

pytestmark = pytest.mark.integration


class _Pausing(RunTx):
    _repo: PausingRepository

    async def next_queued(self, conversation_id: str) -> Run | None:
        found = await super().next_queued(conversation_id)
        if self._repo.armed:
            self._repo.armed = False
            self._repo.looked.set()
            await self._repo.proceed.wait()
        return found


class _PausingTx(_Pausing):
    def __init__(self, conn: asyncpg.Connection, repo: PausingRepository) -> None:
        super().__init__(conn, Topics().prefix, repo.writer)
        self._repo = repo


class _PausingOptimisticTx(_Pausing, OptimisticRunTx):
    def __init__(self, conn: asyncpg.Connection, repo: PausingRepository, cache: RunCache) -> None:
        OptimisticRunTx.__init__(self, conn, Topics().prefix, repo.writer, cache)
        self._repo = repo


class PausingRepository(RunRepository):
    """Holds a transaction open right after it looked for a queued run, until told to go on
    (the closing result's transaction is an optimistic one, turned locked by the close)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.armed = False
        self.looked = asyncio.Event()
        self.proceed = asyncio.Event()

    def _locked_tx(self, conn: asyncpg.Connection) -> RunTx:
        return _PausingTx(conn, self)

    def _optimistic_tx(self, conn: asyncpg.Connection) -> OptimisticRunTx:
        return _PausingOptimisticTx(conn, self, self._runs)


class FixedClock:
    def __call__(self) -> datetime:
        return datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
async def pausing_repo(database_url: str) -> AsyncIterator[PausingRepository]:
    repository = PausingRepository(database_url)
    await repository.open()
    try:
        yield repository
    finally:
        repository.proceed.set()
        await repository.close()


def _reply(command: StepCommand) -> MemoryContextReady | RouteDecided | AnswerGenerated:
    envelope, request_id = command.envelope(), command.event_id
    if isinstance(command, MemoryContextRequested):
        return MemoryContextReady(context=MemoryContext(), request_id=request_id, **envelope)
    if command.model_dump()["type"] == "route.requested":
        return RouteDecided(
            intent=Intent.CHAT, route=Route.PLAIN_CHAT, request_id=request_id, **envelope
        )
    return AnswerGenerated(text="answer", request_id=request_id, **envelope)


def _commands(out: list[Outgoing]) -> list[StepCommand]:
    return [item.event for item in out if isinstance(item.event, StepCommand)]


async def _waiting_on_a_lock(database_url: str) -> bool:
    conn = await asyncpg.connect(database_url)
    try:
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE NOT l.granted AND d.datname = current_database()"
        )
    finally:
        await conn.close()
    return bool(waiting)


async def test_request_racing_the_end_of_the_previous_run_still_starts(
    pausing_repo: PausingRepository, settings: HarnessSettings, database_url: str
) -> None:
    service = RunService(pausing_repo, settings, FixedClock())
    conversation = new_id()
    first = ChatRequested(text="one", reply_to="r", run_id=new_id(), conversation_id=conversation)
    second = ChatRequested(text="two", reply_to="r", run_id=new_id(), conversation_id=conversation)
    command = _commands(await service.on_chat(first, None))[0]
    while not isinstance(command, TurnCompleted):
        command = _commands(await service.on_result(_reply(command)))[0]

    # the first run closes and finds nothing queued, but has not committed yet...
    pausing_repo.armed = True
    closing = asyncio.create_task(
        service.on_result(TurnRecorded(request_id=command.event_id, **command.envelope()))
    )
    await asyncio.wait_for(pausing_repo.looked.wait(), 10)
    # ...when the second request of the conversation arrives
    requesting = asyncio.create_task(service.on_chat(second, None))
    for _ in range(1000):
        if requesting.done() or await _waiting_on_a_lock(database_url):
            break
        await asyncio.sleep(0.01)
    pausing_repo.proceed.set()
    out = await asyncio.wait_for(closing, 10) + await asyncio.wait_for(requesting, 10)

    started = [c for c in _commands(out) if c.run_id == second.run_id]
    assert len(started) == 1
    assert isinstance(started[0], MemoryContextRequested)
    async with pausing_repo.transaction() as tx:
        run = await tx.get(second.run_id or "")
        done = await tx.get(first.run_id or "")
    assert run is not None
    assert done is not None
    assert done.status is RunStatus.COMPLETED
    assert run.status is RunStatus.RUNNING
