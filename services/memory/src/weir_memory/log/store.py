"""PostgreSQL side of the turn log: the chats (`memory_chats`, written by session memory)
that still have to enter the lexical index, the log's retention, and the lexical index's
identity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from ..db import Database
from .context import tail


@dataclass(frozen=True)
class LoggedChat:
    """One turn of the log, as searched and shown."""

    user_id: str
    run_id: str
    conversation_id: str
    user_input: str
    ai_reply: str
    created_at: datetime
    embedding: list[float]
    before: str = ""  # the end of the conversation's previous turn (read for indexing only)

    @property
    def text(self) -> str:
        """Both sides of the turn, as shown."""
        return f"{self.user_input}\n{self.ai_reply}".strip()

    @property
    def indexed_text(self) -> str:
        """What BM25 reads: the turn after the end of the one before it (`..context`)."""
        return f"{self.before}\n{self.text}" if self.before else self.text


_COLUMNS = "user_id, run_id, conversation_id, user_input, ai_reply, created_at, embedding"
# `_COLUMNS` of chats `c` and `before`: up to $1 + 1 last characters of the conversation's
# previous chat (along the index on (conversation_id, id))
_IN_CONTEXT = (
    "SELECT c.user_id, c.run_id, c.conversation_id, c.user_input, c.ai_reply, c.created_at,"
    " c.embedding, p.before FROM memory_chats c LEFT JOIN LATERAL ("
    " SELECT right(rtrim(p.user_input || E'\\n' || p.ai_reply), $1 + 1) AS before"
    " FROM memory_chats p WHERE p.conversation_id = c.conversation_id"
    " AND p.user_id = c.user_id AND p.id < c.id ORDER BY p.id DESC LIMIT 1) p ON true"
)


def _chat(r: asyncpg.Record, context_chars: int = 0) -> LoggedChat:
    before = r.get("before") if context_chars else None
    return LoggedChat(
        r["user_id"], r["run_id"], r["conversation_id"], r["user_input"], r["ai_reply"],
        r["created_at"], list(r["embedding"] or []), tail(before, context_chars) if before else "",
    )  # fmt: skip


class LogStore:
    """Queries of the turn log; every read of a user's chats names the user."""

    def __init__(self, db: Database, context_chars: int = 0) -> None:
        self._db = db
        self._context_chars = context_chars  # of the previous turn, in a turn's BM25 text

    async def unindexed(self, limit: int) -> list[LoggedChat]:
        """The oldest chats not yet in the lexical index, each with the end of the turn
        before it."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"{_IN_CONTEXT} WHERE c.lexical_at IS NULL ORDER BY c.id LIMIT $2",
                self._context_chars,
                limit,
            )
        return [_chat(r, self._context_chars) for r in rows]

    async def mark_indexed(self, chats: Sequence[LoggedChat], at: datetime) -> None:
        """Record that these chats are in the lexical index."""
        async with self._db.connection() as conn:
            await conn.executemany(
                "UPDATE memory_chats SET lexical_at = $3 WHERE user_id = $1 AND run_id = $2",
                [(c.user_id, c.run_id, at) for c in chats],
            )

    async def unmark_all(self) -> int:
        """Every chat is to be indexed again (the lexical index was lost or replaced)."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "UPDATE memory_chats SET lexical_at = NULL WHERE lexical_at IS NOT NULL"
            )
        return int(status.split()[-1])

    async def by_run(
        self, user_id: str, run_ids: Sequence[str], *, besides: str | None = None
    ) -> list[LoggedChat]:
        """The user's chats of these runs (any order; gone ones are left out), none of
        conversation `besides`."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM memory_chats"  # noqa: S608 - constant columns
                " WHERE user_id = $1 AND run_id = ANY($2)"
                " AND ($3::text IS NULL OR conversation_id <> $3)",
                user_id,
                list(run_ids),
                besides,
            )
        return [_chat(r) for r in rows]

    async def between(
        self,
        user_id: str,
        start: datetime,
        end: datetime,
        limit: int,
        *,
        besides: str | None = None,
    ) -> list[LoggedChat]:
        """The user's chats from `start` (inclusive) to `end` (exclusive), latest first; none
        of conversation `besides`."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM memory_chats WHERE user_id = $1"  # noqa: S608
                " AND created_at >= $2 AND created_at < $3"
                " AND ($5::text IS NULL OR conversation_id <> $5)"
                " ORDER BY created_at DESC LIMIT $4",
                user_id,
                start,
                end,
                limit,
                besides,
            )
        return [_chat(r) for r in rows]

    async def conversations(self, user_id: str) -> list[str]:
        """Every conversation of the user that has chats in the log."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT DISTINCT conversation_id FROM memory_chats WHERE user_id = $1", user_id
            )
        return [r["conversation_id"] for r in rows]

    async def older_than(self, before: datetime, limit: int) -> list[LoggedChat]:
        """Chats created before `before` (of any user): what the retention removes."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM memory_chats WHERE created_at < $1"  # noqa: S608
                " ORDER BY id LIMIT $2",
                before,
                limit,
            )
        return [_chat(r) for r in rows]

    async def of_conversation(self, user_id: str, conversation_id: str) -> list[LoggedChat]:
        """Every chat of one conversation of the user that is in the lexical index, each
        with the end of the turn before it."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"{_IN_CONTEXT} WHERE c.user_id = $2"
                " AND c.conversation_id = $3 AND c.lexical_at IS NOT NULL",
                self._context_chars,
                user_id,
                conversation_id,
            )
        return [_chat(r, self._context_chars) for r in rows]

    async def delete(self, chats: Sequence[LoggedChat]) -> None:
        """Delete these chats from the log."""
        async with self._db.connection() as conn:
            await conn.executemany(
                "DELETE FROM memory_chats WHERE user_id = $1 AND run_id = $2",
                [(c.user_id, c.run_id) for c in chats],
            )

    async def token(self, name: str) -> str | None:
        """The sentinel token last written into the lexical index `name`."""
        async with self._db.connection() as conn:
            value = await conn.fetchval(
                "SELECT token FROM memory_lexical_indexes WHERE name = $1", name
            )
        return str(value) if value is not None else None

    async def set_token(self, name: str, token: str) -> None:
        """Remember the sentinel token of the lexical index `name`."""
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_lexical_indexes (name, token) VALUES ($1, $2)"
                " ON CONFLICT (name) DO UPDATE SET token = $2",
                name,
                token,
            )
