"""PostgreSQL storage of long-term memory: items (semantic, episodic).

Every statement names the user: no query can return another user's rows. Each row records
the embedder that made its vector; a read of vectors returns only rows of this process's
embedder, so vectors of two embedders never meet in one computation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg

from ..db import Database
from .models import Category, Layer, MemoryItem

_ITEM_COLUMNS = (
    "id, user_id, layer, category, content, title, detail, importance, embedding, source_runs,"
    " conversation_id, created_at, last_accessed, decayed_at"
)
_NO_VECTOR = _ITEM_COLUMNS.replace("embedding", "'{}'::real[] AS embedding")


def to_item(row: asyncpg.Record) -> MemoryItem:
    """A row of `memory_items` as a `MemoryItem`."""
    return MemoryItem(
        id=row["id"],
        user_id=row["user_id"],
        layer=Layer(row["layer"]),
        category=Category(row["category"]),
        content=row["content"],
        title=row["title"],
        detail=row["detail"],
        importance=float(row["importance"]),
        embedding=list(row["embedding"]),
        source_runs=list(row["source_runs"]),
        conversation_id=row["conversation_id"],
        created_at=row["created_at"],
        last_accessed=row["last_accessed"],
        decayed_at=row["decayed_at"],
    )


def _values(item: MemoryItem) -> tuple[object, ...]:
    return (
        item.id, item.user_id, item.layer.value, item.category.value, item.content, item.title,
        item.detail, item.importance, item.embedding, item.source_runs, item.conversation_id,
        item.created_at, item.last_accessed, item.decayed_at,
    )  # fmt: skip


class ItemStore:
    """Memory items of every user, in `memory_items`, with vectors made by `embedder` (its
    tag: name@dimension)."""

    def __init__(self, db: Database, embedder: str) -> None:
        self._db = db
        self.embedder = embedder

    def _only(self, vectors: bool) -> str | None:
        """The embedder a read must match: with vectors, this one; without, any."""
        return self.embedder if vectors else None

    async def insert(self, item: MemoryItem) -> bool:
        """Store a new item; False when its id exists (a redelivered turn)."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                f"INSERT INTO memory_items ({_ITEM_COLUMNS}, embedder) VALUES"  # noqa: S608
                " ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) ON CONFLICT (id) DO NOTHING",
                *_values(item),
                self.embedder,
            )
        return bool(status.endswith(" 1"))

    async def get(
        self, user_id: str, ids: Sequence[str], vectors: bool = False
    ) -> list[MemoryItem]:
        """The user's items with these ids (others' ids give nothing)."""
        columns = _ITEM_COLUMNS if vectors else _NO_VECTOR
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {columns} FROM memory_items WHERE user_id = $1 AND id = ANY($2)"  # noqa: S608
                " AND ($3::text IS NULL OR embedder = $3)",
                user_id,
                list(ids),
                self._only(vectors),
            )
        return [to_item(r) for r in rows]

    async def of_user(
        self, user_id: str, layer: Layer | None = None, vectors: bool = False, limit: int = 1000
    ) -> list[MemoryItem]:
        """The user's items, newest first."""
        columns = _ITEM_COLUMNS if vectors else _NO_VECTOR
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {columns} FROM memory_items WHERE user_id = $1"  # noqa: S608
                " AND ($2::text IS NULL OR layer = $2) AND ($4::text IS NULL OR embedder = $4)"
                " ORDER BY created_at DESC, id LIMIT $3",
                user_id,
                layer.value if layer else None,
                limit,
                self._only(vectors),
            )
        return [to_item(r) for r in rows]

    async def touch(self, user_id: str, ids: Sequence[str], now: datetime) -> None:
        """Mark items as recalled now (expiry counts from the last access)."""
        async with self._db.connection() as conn:
            await conn.execute(
                "UPDATE memory_items SET last_accessed = greatest(last_accessed, $3)"
                " WHERE user_id = $1 AND id = ANY($2)",
                user_id,
                list(ids),
                now,
            )

    async def reinforce(
        self,
        user_id: str,
        item_id: str,
        importance: float,
        *,
        now: datetime,
        runs: Sequence[str],
        boost: float = 0.05,
    ) -> bool:
        """A repeated memory: raise its importance (the higher of both, plus `boost`), touch
        it, add the turns it came from; False when the user has no such item."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "UPDATE memory_items SET importance = least(1.0, greatest(importance, $3) + $6),"
                " last_accessed = greatest(last_accessed, $4),"
                " source_runs = ARRAY(SELECT DISTINCT unnest(source_runs || $5::text[]))"
                " WHERE user_id = $1 AND id = $2",
                user_id,
                item_id,
                importance,
                now,
                list(runs),
                boost,
            )
        return bool(status.endswith(" 1"))

    async def decay(self, user_id: str, now: datetime, rate: float) -> int:
        """Importance × rate per whole day since the last decay; returns rows changed."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "WITH d AS (SELECT id, floor(extract(epoch FROM ($2 - decayed_at)) / 86400) AS n"
                "  FROM memory_items WHERE user_id = $1 AND decayed_at <= $2 - interval '1 day')"
                " UPDATE memory_items m SET importance = m.importance * power($3::float8, d.n),"
                "  decayed_at = m.decayed_at + d.n * interval '1 day'"
                " FROM d WHERE m.id = d.id AND m.user_id = $1",
                user_id,
                now,
                rate,
            )
        return int(status.split()[-1])

    async def expire(self, user_id: str, now: datetime, days: float, below: float) -> list[str]:
        """Delete items unused for more than `days` whose importance is below `below`."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "DELETE FROM memory_items WHERE user_id = $1 AND last_accessed < $2"
                " AND importance < $3 RETURNING id",
                user_id,
                now - timedelta(days=days),
                below,
            )
        return [r["id"] for r in rows]

    async def apply_merge(
        self, user_id: str, updated: Sequence[MemoryItem], deleted: Sequence[str]
    ) -> None:
        """Persist merged items and delete the ones folded into them, in one transaction.

        Writers (store's reinforce, recall's touch) do not take the consolidation's user
        lock, so a row may have changed since the plan read it: the update merges into the
        row as it is now (the higher importance, the later access, every source run) instead
        of overwriting a concurrent write with the plan's older copy."""
        async with self._db.transaction() as conn:
            for item in updated:
                await conn.execute(
                    "UPDATE memory_items SET content = $3,"
                    " importance = greatest(importance, $4), embedding = $5,"
                    " source_runs = ARRAY(SELECT r FROM unnest($6::text[] || source_runs)"
                    "  WITH ORDINALITY AS t(r, n) GROUP BY r ORDER BY min(n)),"
                    " created_at = least(created_at, $7),"
                    " last_accessed = greatest(last_accessed, $8), embedder = $9"
                    " WHERE user_id = $1 AND id = $2",
                    user_id, item.id, item.content, item.importance, item.embedding,
                    item.source_runs, item.created_at, item.last_accessed, self.embedder,
                )  # fmt: skip
            if deleted:
                await conn.execute(
                    "DELETE FROM memory_items WHERE user_id = $1 AND id = ANY($2)",
                    user_id,
                    list(deleted),
                )

    async def delete(self, user_id: str, layer: Layer, item_id: str) -> bool:
        """Delete one item of this user and layer; False when there is none."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "DELETE FROM memory_items WHERE user_id = $1 AND layer = $2 AND id = $3",
                user_id,
                layer.value,
                item_id,
            )
        return bool(status.endswith(" 1"))

    async def count(self, user_id: str) -> int:
        """How many items the user has."""
        async with self._db.connection() as conn:
            n = await conn.fetchval("SELECT count(*) FROM memory_items WHERE user_id = $1", user_id)
        return int(n)
