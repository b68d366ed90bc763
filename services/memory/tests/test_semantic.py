"""Store-time dedup against the index when the index is behind PostgreSQL (real engines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg
import pytest

from weir_memory.longterm.models import Analysis, Category

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory
    from weir_memory.settings import MemorySettings

    from .conftest import WallClock

pytestmark = pytest.mark.integration


async def test_a_fact_whose_row_is_gone_but_vector_remains_is_stored_again(
    long_term: LongTermMemory, memory_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    fact = Analysis(importance=0.7, category=Category.IDENTITY, content="I live in Lisbon.")
    first = await long_term.semantic.store(user, fact, runs=["r1"], at=wall.now)
    # the row is deleted and the index's delete never happened (Milvus was down)
    conn = await asyncpg.connect(memory_settings.database_url)
    try:
        await conn.execute("DELETE FROM memory_items WHERE id = $1", first.id)
    finally:
        await conn.close()
    again = await long_term.semantic.store(user, fact, runs=["r2"], at=wall.now)
    assert again.outcome == "stored"
    [item] = await long_term.semantic.items.of_user(user)
    assert (item.id, item.content, item.source_runs) == (again.id, "I live in Lisbon.", ["r2"])
    vector = await long_term.embedder.embed_query("Where do I live?")
    hits = await long_term.semantic.index.search(user, ["semantic"], vector, 5)
    assert [h.id for h in hits] == [again.id], "the stale vector is gone"
    assert [r.item.id for r in await long_term.semantic.recall(user, vector)] == [again.id]
