"""PostgreSQL storage of sessions and their chats (seed 001's `sessions` and `chats`).

Like seed 001's `summary_embedding` columns, each chat keeps the vector of its summary and
each session the sum of its chats' vectors, with the embedder (name@dimension) that made
them; a session's sum made by another embedder reads as empty, never as a vector to add to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from ..db import Database


@dataclass(frozen=True)
class Session:
    """One conversation: its rolling summary and the sum of its chats' vectors."""

    id: int
    conversation_id: str
    user_id: str
    title: str
    summary: str
    embedding_sum: list[float]
    chat_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Chat:
    """One turn of a session."""

    id: int
    run_id: str
    conversation_id: str
    user_input: str
    ai_reply: str
    summary: str
    created_at: datetime


def _session(row: asyncpg.Record, embedder: str) -> Session:
    own = row["embedder"] == embedder
    return Session(
        id=row["id"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        title=row["title"],
        summary=row["summary"],
        embedding_sum=list(row["embedding_sum"] or []) if own else [],
        chat_count=row["chat_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _chat(row: asyncpg.Record) -> Chat:
    return Chat(
        id=row["id"],
        run_id=row["run_id"],
        conversation_id=row["conversation_id"],
        user_input=row["user_input"],
        ai_reply=row["ai_reply"],
        summary=row["summary"],
        created_at=row["created_at"],
    )


_SESSION = "id, conversation_id, user_id, title, summary, embedding_sum, chat_count, created_at,"
_SESSION += " updated_at, embedder"
_CHAT = "id, run_id, conversation_id, user_input, ai_reply, summary, created_at"


class SessionStore:
    """`memory_sessions` and `memory_chats`, with vectors made by `embedder` (its tag:
    name@dimension); every query names the user."""

    def __init__(self, db: Database, embedder: str) -> None:
        self._db = db
        self.embedder = embedder

    async def add_chat(self, user_id: str, chat: Chat) -> bool:
        """Store a chat; False when its run was stored before."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "INSERT INTO memory_chats (run_id, conversation_id, user_id, user_input, ai_reply,"
                " summary, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING",
                chat.run_id, chat.conversation_id, user_id, chat.user_input, chat.ai_reply,
                chat.summary, chat.created_at,
            )  # fmt: skip
        return bool(status.endswith(" 1"))

    async def vector_before(
        self, user_id: str, conversation_id: str, run_id: str
    ) -> list[float] | None:
        """The vector of the chat before `run_id`'s in its session; None when there is none,
        or this embedder did not make it (as `VectorRows.chats_before` reads it)."""
        async with self._db.connection() as conn:
            value = await conn.fetchval(
                "SELECT CASE WHEN embedder = $4 THEN embedding END FROM memory_chats"
                " WHERE conversation_id = $2 AND user_id = $1"
                " AND id < (SELECT id FROM memory_chats WHERE user_id = $1 AND run_id = $3)"
                " ORDER BY id DESC LIMIT 1",
                user_id,
                conversation_id,
                run_id,
                self.embedder,
            )
        return list(value) if value is not None else None

    async def keep_chat_vectors(self, vectors: Sequence[tuple[str, str, list[float]]]) -> None:
        """Store the vectors of chats, as (user id, run id, vector of the chat's summary)."""
        async with self._db.connection() as conn:
            await conn.executemany(
                "UPDATE memory_chats SET embedding = $3, embedder = $4"
                " WHERE user_id = $1 AND run_id = $2",
                [(user, run, vector, self.embedder) for user, run, vector in vectors],
            )

    async def save(self, session: Session) -> None:
        """Insert or update a session."""
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_sessions (conversation_id, user_id, title, summary,"
                " embedding_sum, chat_count, created_at, updated_at, embedder)"
                " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT (user_id, conversation_id)"
                " DO UPDATE SET title = $3, summary = $4, embedding_sum = $5, chat_count = $6,"
                " updated_at = $8, embedder = $9",
                session.conversation_id, session.user_id, session.title, session.summary,
                session.embedding_sum, session.chat_count, session.created_at, session.updated_at,
                self.embedder,
            )  # fmt: skip

    async def get(self, user_id: str, conversation_id: str) -> Session | None:
        """The user's session of this conversation."""
        async with self._db.connection() as conn:
            row = await conn.fetchrow(
                f"SELECT {_SESSION} FROM memory_sessions"  # noqa: S608 - constant columns
                " WHERE user_id = $1 AND conversation_id = $2",
                user_id,
                conversation_id,
            )
        return _session(row, self.embedder) if row else None

    async def of_conversations(
        self, user_id: str, conversation_ids: Sequence[str]
    ) -> dict[str, Session]:
        """The user's sessions of these conversations, by conversation id (one query)."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_SESSION} FROM memory_sessions"  # noqa: S608 - constant columns
                " WHERE user_id = $1 AND conversation_id = ANY($2::text[])",
                user_id,
                list(conversation_ids),
            )
        return {r["conversation_id"]: _session(r, self.embedder) for r in rows}

    async def of_user(
        self, user_id: str, limit: int = 50, since: datetime | None = None
    ) -> list[Session]:
        """The user's sessions, most recently updated first."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_SESSION} FROM memory_sessions WHERE user_id = $1"  # noqa: S608
                " AND ($2::timestamptz IS NULL OR updated_at > $2)"
                " ORDER BY updated_at DESC, id DESC LIMIT $3",
                user_id,
                since,
                limit,
            )
        return [_session(r, self.embedder) for r in rows]

    async def chats(
        self, user_id: str, conversation_ids: Sequence[str], since: datetime | None = None
    ) -> list[Chat]:
        """Chats of these sessions in order (those after `since`, when given)."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_CHAT} FROM memory_chats"  # noqa: S608
                " WHERE user_id = $1 AND conversation_id = ANY($2)"
                " AND ($3::timestamptz IS NULL OR created_at > $3) ORDER BY id",
                user_id,
                list(conversation_ids),
                since,
            )
        return [_chat(r) for r in rows]

    async def latest_chats(self, user_id: str, conversation_id: str, last: int) -> list[Chat]:
        """The `last` chats of one session in order: read newest first along the index of a
        user's sessions (migration 0006), at the same cost however long the session grows."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_CHAT} FROM (SELECT {_CHAT} FROM memory_chats"  # noqa: S608
                " WHERE conversation_id = $2 AND user_id = $1"
                " ORDER BY id DESC LIMIT $3) c ORDER BY id",
                user_id,
                conversation_id,
                last,
            )
        return [_chat(r) for r in rows]

    async def chats_by_run(self, user_id: str, run_ids: Sequence[str]) -> list[Chat]:
        """The user's chats of these runs."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_CHAT} FROM memory_chats"  # noqa: S608
                " WHERE user_id = $1 AND run_id = ANY($2) ORDER BY id",
                user_id,
                list(run_ids),
            )
        return [_chat(r) for r in rows]
