""" "Forget me" on the real engines: PostgreSQL, Milvus and Redis hold nothing of the user
afterwards, and a turn that happened before the forget, handled after it, adds nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING
from uuid import uuid4

import asyncpg
import pytest

from weir_common.engines import redis_client
from weir_common.events import Turn, TurnCompleted
from weir_memory.admin import MemoryAdmin
from weir_memory.flash import Flash
from weir_memory.longterm.ledger import USER_TABLES
from weir_memory.longterm.vector_index import Kind
from weir_memory.repository import RedisShortTermStore
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration

KINDS: tuple[Kind, ...] = ("semantic", "episodic", "chat")
WORDS = "My name is Zoe and I collect Byzantine astrolabes"


@pytest.fixture
async def memory(long_term: LongTermMemory, redis_url: str) -> AsyncIterator[MemoryService]:
    """The memory logic with long-term memory and short-term memory in a real Redis."""
    client = redis_client(redis_url)
    stm = RedisShortTermStore(client, window=12, ttl_s=600, prefix=f"t:{uuid4().hex}:")
    service = MemoryService(stm, Summarizer(Flash(None)), window=10, discard=2)
    service.long_term = long_term
    yield service
    await client.aclose()


def turn(user: str, run: str, wall: WallClock, **shift: float) -> TurnCompleted:
    return TurnCompleted(
        run_id=run, conversation_id=f"conv-{user}", user_id=user, user_text=WORDS,
        assistant_text="Nice to meet you, Zoe", occurred_at=wall.now + timedelta(**shift),
    )  # fmt: skip


async def rows_about(settings: MemorySettings, user: str) -> dict[str, int]:
    conn = await asyncpg.connect(settings.database_url)
    try:
        return {
            t: int(await conn.fetchval(f"SELECT count(*) FROM {t} WHERE user_id = $1", user))
            for t in USER_TABLES
        }
    finally:
        await conn.close()


async def redis_keys(redis_url: str, user: str) -> list[bytes]:
    client = redis_client(redis_url)
    try:
        return [k async for k in client.scan_iter(match=f"*{user}*")]
    finally:
        await client.aclose()


async def vectors_of(long_term: LongTermMemory, user: str) -> int:
    vector = await long_term.embedder.embed_query(WORDS)
    return len(await long_term.semantic.index.search(user, KINDS, vector, 50))


async def test_after_forget_no_store_holds_the_user_and_an_old_turn_adds_nothing(
    memory: MemoryService,
    long_term: LongTermMemory,
    memory_settings: MemorySettings,
    redis_url: str,
    wall: WallClock,
    user: str,
) -> None:
    admin = MemoryAdmin(long_term, memory.stm)
    await admin.store(user, WORDS, importance=0.9, at=wall.now)
    assert await memory.record_turn(turn(user, "r1", wall), f"conv-{user}")
    assert sum((await rows_about(memory_settings, user)).values()) > 0
    assert await redis_keys(redis_url, user)
    assert await vectors_of(long_term, user) > 0

    wall.advance(seconds=1)
    tombstone, deleted = await admin.forget(user, wall.now)
    assert tombstone == wall.now
    assert deleted["memory_items"] >= 1
    assert deleted["conversations"] == 1

    def nothing_left() -> dict[str, int]:
        return dict.fromkeys(USER_TABLES, 0)

    assert await rows_about(memory_settings, user) == nothing_left()
    assert await redis_keys(redis_url, user) == []
    assert await vectors_of(long_term, user) == 0

    # a turn in flight at the forget (it happened before), handled after it
    assert not await memory.record_turn(turn(user, "r2", wall, seconds=-0.5), f"conv-{user}")
    old = Turn(run_id="r3", user=WORDS, assistant="Hello again, Zoe")
    await long_term.remember(user, f"conv-{user}", old, wall.now - timedelta(seconds=0.5), [])
    assert await rows_about(memory_settings, user) == nothing_left()
    assert await redis_keys(redis_url, user) == []
    assert await vectors_of(long_term, user) == 0
    again_at, again = await admin.forget(user, wall.now - timedelta(hours=1))
    assert again_at == tombstone, "a tombstone never moves back"
    assert again == {**nothing_left(), "conversations": 0}

    # what happens after the forget is remembered again
    wall.advance(seconds=1)
    assert await memory.record_turn(turn(user, "r4", wall), f"conv-{user}")
    assert (await rows_about(memory_settings, user))["memory_chats"] == 1
