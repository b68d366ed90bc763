"""Consolidation bookkeeping on PostgreSQL: the per-user lock under load, pending candidates."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import asyncpg
import pytest

from weir_memory.longterm.models import Analysis, Category

if TYPE_CHECKING:
    from weir_memory.longterm.ledger import Ledger
    from weir_memory.longterm.service import LongTermMemory
    from weir_memory.settings import MemorySettings

    from .conftest import WallClock

pytestmark = pytest.mark.integration
POOL_SIZE = 8  # the pool `Database` opens by default
TIMEOUT_S = 60.0


async def store(memory: LongTermMemory, user: str, text: str, wall: WallClock) -> str:
    fact = Analysis(importance=0.7, category=Category.PREFERENCE, content=text)
    stored = await memory.semantic.store(user, fact, runs=[f"run-{text}"], at=wall.now)
    assert stored.id is not None
    return stored.id


async def test_more_concurrent_consolidations_than_pooled_connections_all_finish(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    users = [f"{user}-{n}" for n in range(POOL_SIZE + 4)]
    for who in users:
        for text in ("I like green tea.", "I drink green tea every morning."):
            await store(long_term, who, text, wall)
    wall.advance(days=2)
    reports = await asyncio.wait_for(
        asyncio.gather(*(long_term.consolidator.run(who) for who in users)), TIMEOUT_S
    )
    assert [r.decayed for r in reports] == [2] * len(users)


async def test_memories_noted_while_a_consolidation_runs_stay_pending(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    ledger = long_term.ledger
    texts = ("I own a red bike.", "I cook pasta on Fridays.")
    first = [await store(long_term, user, text, wall) for text in texts]
    candidates = await ledger.add_new_items(user, first)
    async with ledger.user_lock(user):  # another replica's run holds the user for a moment
        running = asyncio.create_task(long_term.consolidator.run(user, candidates))
        await asyncio.sleep(0.2)
        later = await store(long_term, user, "My sister lives in Porto.", wall)
        assert await ledger.add_new_items(user, [later]) == [*first, later]
    await asyncio.wait_for(running, TIMEOUT_S)
    assert await ledger.add_new_items(user, []) == [later]


async def test_a_user_lock_is_held_in_its_block_and_gone_when_it_exits(
    long_term: LongTermMemory, user: str, memory_settings: MemorySettings
) -> None:
    ledger = long_term.ledger
    conn = await asyncpg.connect(memory_settings.database_url)

    async def held() -> int:  # advisory locks on the key, granted to anyone
        return int(await conn.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND ((classid::bigint << 32) | objid::bigint) = hashtext($1)::bigint",
            f"memory:{user}"))  # fmt: skip

    try:
        async with ledger.user_lock(user):
            assert await held() == 1
            second = asyncio.create_task(_hold(ledger, user))
            await asyncio.sleep(0.3)
            assert not second.done()  # waits for the first holder
        await asyncio.wait_for(second, TIMEOUT_S)
        assert await held() == 0  # released when the block exited, no unlock of its own
    finally:
        await conn.close()


async def _hold(ledger: Ledger, user: str) -> None:
    async with ledger.user_lock(user):
        pass
