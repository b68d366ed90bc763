"""Bookkeeping in PostgreSQL: turns already remembered, consolidation counters, forgetting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..db import Database

# Every table that holds something about a user, in an order that respects no foreign keys
# (there are none): all of them are emptied for "forget me". `memory_forgotten` (the
# tombstone) is not among them: it outlives the user's data on purpose.
USER_TABLES = (
    "memory_items",
    "memory_profile",
    "memory_chats",
    "memory_sessions",
    "memory_runs",
    "memory_users",
    "memory_conversations",
    "memory_conversation_turns",
    "memory_pending",
)


_HOLDINGS = """
SELECT EXISTS (SELECT 1 FROM memory_items WHERE user_id = $1) AS memories,
    EXISTS (SELECT 1 FROM memory_chats WHERE user_id = $1) AS chats,
    EXISTS (SELECT 1 FROM memory_sessions WHERE user_id = $1) AS sessions
"""
# Another conversation's rows: one probe on each side of `$2` along the (user_id,
# conversation_id, …) indexes, not a walk over the current conversation's rows.
_HOLDINGS_BESIDES = """
SELECT EXISTS (SELECT 1 FROM memory_items WHERE user_id = $1) AS memories,
    EXISTS (SELECT 1 FROM memory_chats WHERE user_id = $1 AND conversation_id < $2)
    OR EXISTS (SELECT 1 FROM memory_chats WHERE user_id = $1 AND conversation_id > $2)
        AS chats,
    EXISTS (SELECT 1 FROM memory_sessions WHERE user_id = $1 AND conversation_id < $2)
    OR EXISTS (SELECT 1 FROM memory_sessions WHERE user_id = $1 AND conversation_id > $2)
        AS sessions
"""


@dataclass(frozen=True, slots=True)
class Holdings:
    """What long-term memory holds of a user: a search of what it holds none of is skipped."""

    memories: bool
    chats: bool
    sessions: bool

    @property
    def any(self) -> bool:
        return self.memories or self.chats or self.sessions


class Ledger:
    """`memory_runs`, `memory_users` and the tombstones of `memory_forgotten`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remembered(self, user_id: str, run_id: str) -> bool:
        """True when this turn's long-term part was already done."""
        async with self._db.connection() as conn:
            found = await conn.fetchval(
                "SELECT 1 FROM memory_runs WHERE user_id = $1 AND run_id = $2", user_id, run_id
            )
        return found is not None

    async def holdings(self, user_id: str, besides: str | None = None) -> Holdings:
        """Which of memories, chats and sessions long-term memory holds of the user; the
        chats and session of conversation `besides` (the current one, which recall leaves
        out) do not count."""
        async with self._db.connection() as conn:
            if besides is None:
                row = await conn.fetchrow(_HOLDINGS, user_id)
            else:
                row = await conn.fetchrow(_HOLDINGS_BESIDES, user_id, besides)
        return Holdings(row["memories"], row["chats"], row["sessions"])

    async def mark_remembered(self, run_id: str, user_id: str, now: datetime) -> None:
        """Record that this turn's long-term part is done."""
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_runs (run_id, user_id, done_at) VALUES ($1, $2, $3)"
                " ON CONFLICT (user_id, run_id) DO NOTHING",
                run_id,
                user_id,
                now,
            )

    async def add_new_items(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Note new or changed memories since the last consolidation; returns all of them."""
        async with self._db.connection() as conn:
            pending = await conn.fetchval(
                "INSERT INTO memory_users (user_id, pending) VALUES ($1, $2)"
                " ON CONFLICT (user_id) DO UPDATE SET pending = memory_users.pending || $2"
                " RETURNING pending",
                user_id,
                list(ids),
            )
        return list(dict.fromkeys(pending))

    async def consolidated(self, user_id: str, done: Sequence[str], now: datetime) -> None:
        """After a consolidation: drop the candidates it handled (`done`) from the pending
        ones; ids noted while it ran stay for the next."""
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_users (user_id, consolidated_at) VALUES ($1, $3)"
                " ON CONFLICT (user_id) DO UPDATE SET consolidated_at = $3,"
                "  pending = ARRAY(SELECT p FROM unnest(memory_users.pending)"
                "   WITH ORDINALITY AS t(p, n) WHERE p <> ALL($2::text[]) ORDER BY n)",
                user_id,
                list(done),
                now,
            )

    @asynccontextmanager
    async def user_lock(self, user_id: str) -> AsyncIterator[None]:
        """Hold a lock on one user across replicas (one consolidation at a time). The lock
        does not take a connection of the pool the consolidation itself draws from."""
        async with self._db.advisory_lock(f"memory:{user_id}"):
            yield

    async def due(self, now: datetime, interval_s: float, limit: int = 100) -> list[str]:
        """Users not consolidated for `interval_s` seconds (oldest first)."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT user_id FROM memory_users WHERE consolidated_at IS NULL"
                " OR consolidated_at <= $1 ORDER BY consolidated_at NULLS FIRST LIMIT $2",
                now - timedelta(seconds=interval_s),
                limit,
            )
        return [r["user_id"] for r in rows]

    async def tombstone(self, user_id: str, at: datetime) -> datetime:
        """Record that the user was forgotten at `at` (a later forget moves it forward, never
        back); returns the tombstone now in force."""
        async with self._db.connection() as conn:
            found: datetime = await conn.fetchval(
                "INSERT INTO memory_forgotten (user_id, forgotten_at) VALUES ($1, $2)"
                " ON CONFLICT (user_id) DO UPDATE"
                " SET forgotten_at = GREATEST(memory_forgotten.forgotten_at, $2)"
                " RETURNING forgotten_at",
                user_id,
                at,
            )
        return found

    async def forgotten_at(self, user_id: str) -> datetime | None:
        """When the user was last forgotten (None: never)."""
        async with self._db.connection() as conn:
            found: datetime | None = await conn.fetchval(
                "SELECT forgotten_at FROM memory_forgotten WHERE user_id = $1", user_id
            )
        return found

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every row about a user in every memory table; rows deleted per table."""
        deleted: dict[str, int] = {}
        async with self._db.transaction() as conn:
            for table in USER_TABLES:
                status = await conn.execute(
                    f"DELETE FROM {table} WHERE user_id = $1",  # noqa: S608 - constant names
                    user_id,
                )
                deleted[table] = int(status.split()[-1])
        return deleted
