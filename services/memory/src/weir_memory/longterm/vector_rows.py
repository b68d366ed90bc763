"""The stored vectors of every table, for upkeep at start-up: label, re-embed, read them all.

Three tables keep vectors: `memory_items` (of a memory's `content`), `memory_chats` (of a
chat's `chat_text`) and `memory_sessions` (the sum of its chats' vectors). Each row records
the embedder that made its vector as a tag, `name@dimension`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np

from ..db import Database
from ..sessions.service import chat_key
from .vector_index import Kind, VectorRecord

SessionKey = tuple[str, str]  # (user id, conversation id)

# table -> (key column, its value before the first, column of the text that was embedded)
_TEXTS: dict[str, tuple[str, object, str]] = {
    "memory_items": ("id", "", "content"),
    "memory_chats": ("id", 0, "user_input"),  # the chat's text is `chat_text` of it
}


def embedder_tag(name: str, dimension: int) -> str:
    """What a stored vector records about the embedder that made it."""
    return f"{name}@{dimension}"


class VectorRows:
    """Vectors in PostgreSQL, seen from the embedder tagged `embedder` (of `dimension`)."""

    def __init__(self, db: Database, embedder: str, dimension: int) -> None:
        self._db = db
        self.embedder = embedder
        self._dimension = dimension

    async def adopt_unlabelled(self) -> int:
        """Tag vectors stored before tags existed that have this embedder's dimension; returns
        rows. (Assumed: earlier versions had one embedder per dimension, e5 at 384 and term
        frequency at 1024; the others are re-embedded.)"""
        async with self._db.transaction() as conn:
            items = await conn.execute(
                "UPDATE memory_items SET embedder = $1"
                " WHERE embedder IS NULL AND array_length(embedding, 1) = $2",
                self.embedder,
                self._dimension,
            )
            sessions = await conn.execute(
                "UPDATE memory_sessions SET embedder = $1 WHERE embedder IS NULL"
                " AND coalesce(array_length(embedding_sum, 1), $2) = $2",
                self.embedder,
                self._dimension,
            )
        return int(items.split()[-1]) + int(sessions.split()[-1])

    async def count_foreign(self) -> dict[str, int]:
        """Rows per table whose vector another embedder made (or that have none yet)."""
        async with self._db.connection() as conn:
            return {
                table: int(
                    await conn.fetchval(
                        f"SELECT count(*) FROM {table} WHERE embedder IS DISTINCT FROM $1",  # noqa: S608
                        self.embedder,
                    )
                )
                for table in ("memory_items", "memory_chats", "memory_sessions")
            }

    async def chats_without_vectors(self) -> int:
        """Chats whose vector never reached PostgreSQL (recorded before vectors were kept, or
        a failure between storing the chat and indexing it)."""
        async with self._db.connection() as conn:
            return int(
                await conn.fetchval("SELECT count(*) FROM memory_chats WHERE embedder IS NULL")
            )

    async def chat_records(self, ids: Sequence[int]) -> list[VectorRecord]:
        """Index records of these chats (by row id), with this embedder's vectors."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT id, user_id, run_id, conversation_id, embedding AS vector"
                " FROM memory_chats WHERE id = ANY($1) AND embedder = $2",
                list(ids),
                self.embedder,
            )
        return [_chat(r) for r in rows]

    async def foreign_texts(
        self, table: str, after: object | None, limit: int
    ) -> list[tuple[Any, str]]:
        """(key, text) of rows of `table` (items or chats) whose vector is foreign, in key
        order after `after` (None: from the first)."""
        key, first, text = _TEXTS[table]
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {key}, {text} FROM {table} WHERE embedder IS DISTINCT FROM $1"  # noqa: S608
                f" AND {key} > $2 ORDER BY {key} LIMIT $3",
                self.embedder,
                first if after is None else after,
                limit,
            )
        return [(r[0], r[1]) for r in rows]

    async def chats_before(self, ids: Sequence[int]) -> dict[int, tuple[int, list[float] | None]]:
        """For each of these chats (by row id) that has one, the chat before it in its
        session: its id and its vector if this embedder made it."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT c.id, p.id AS before, CASE WHEN p.embedder = $2 THEN p.embedding END"
                " AS vector FROM memory_chats c CROSS JOIN LATERAL (SELECT id, embedding,"
                " embedder FROM memory_chats p WHERE p.conversation_id = c.conversation_id"
                " AND p.user_id = c.user_id AND p.id < c.id ORDER BY p.id DESC LIMIT 1) p"
                " WHERE c.id = ANY($1)",
                list(ids),
                self.embedder,
            )
        return {r["id"]: (r["before"], list(r["vector"]) if r["vector"] else None) for r in rows}

    async def set_vectors(self, table: str, vectors: Sequence[tuple[Any, list[float]]]) -> None:
        """Replace the vectors of these rows of `table` by this embedder's."""
        key = _TEXTS[table][0]
        async with self._db.transaction() as conn:
            await conn.executemany(
                f"UPDATE {table} SET embedding = $2, embedder = $3 WHERE {key} = $1",  # noqa: S608
                [(k, v, self.embedder) for k, v in vectors],
            )

    async def foreign_sessions(self, after: int, limit: int) -> list[tuple[int, SessionKey]]:
        """(id, session key) of sessions whose sum is foreign, by id."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT id, user_id, conversation_id FROM memory_sessions"
                " WHERE embedder IS DISTINCT FROM $1 AND id > $2 ORDER BY id LIMIT $3",
                self.embedder,
                after,
                limit,
            )
        return [(r["id"], (r["user_id"], r["conversation_id"])) for r in rows]

    async def resum_sessions(self, sessions: Sequence[SessionKey]) -> None:
        """Set each session's sum to the sum of its chats' vectors (of this embedder)."""
        sums: dict[SessionKey, Any] = dict.fromkeys(sessions)
        async with self._db.transaction() as conn:
            rows = await conn.fetch(
                "SELECT c.user_id, c.conversation_id, c.embedding FROM memory_chats c"
                " JOIN unnest($1::text[], $2::text[]) AS s(user_id, conversation_id)"
                " USING (user_id, conversation_id) WHERE c.embedder = $3",
                [u for u, _ in sessions],
                [c for _, c in sessions],
                self.embedder,
            )
            for row in rows:
                key = (row["user_id"], row["conversation_id"])
                vector = np.asarray(row["embedding"], dtype=np.float64)
                sums[key] = vector if sums[key] is None else sums[key] + vector
            await conn.executemany(
                "UPDATE memory_sessions SET embedding_sum = $3, embedder = $4"
                " WHERE user_id = $1 AND conversation_id = $2",
                [(u, c, None if s is None else s.tolist(), self.embedder)
                 for (u, c), s in sums.items()],
            )  # fmt: skip

    async def records(self, page: int) -> AsyncIterator[list[VectorRecord]]:
        """Every vector of this embedder as index records, `page` rows at a time."""
        for table, columns, vector, first, make in _SOURCES:
            after = first
            while True:
                async with self._db.connection() as conn:
                    rows = await conn.fetch(
                        f"SELECT id, {columns}, {vector} AS vector FROM {table}"  # noqa: S608
                        f" WHERE embedder = $1 AND {vector} IS NOT NULL AND id > $2"
                        " ORDER BY id LIMIT $3",
                        self.embedder,
                        after,
                        page,
                    )
                if not rows:
                    break
                after = rows[-1]["id"]
                yield [make(r) for r in rows]

    async def index_built(self, name: str) -> bool:
        """True when index `name` was last rebuilt with this embedder's vectors."""
        async with self._db.connection() as conn:
            found = await conn.fetchval(
                "SELECT embedder FROM memory_vector_indexes WHERE name = $1", name
            )
        return bool(found == self.embedder)

    async def mark_index(self, name: str, built: bool) -> None:
        """Record that index `name` holds every vector of this embedder (or forget that)."""
        async with self._db.connection() as conn:
            if not built:
                await conn.execute("DELETE FROM memory_vector_indexes WHERE name = $1", name)
                return
            await conn.execute(
                "INSERT INTO memory_vector_indexes (name, embedder, built_at) VALUES ($1, $2,"
                " now()) ON CONFLICT (name) DO UPDATE SET embedder = $2, built_at = now()",
                name,
                self.embedder,
            )


def _item(row: Any) -> VectorRecord:
    kind: Kind = "episodic" if row["layer"] == "episodic" else "semantic"
    return VectorRecord(row["id"], row["user_id"], kind, list(row["vector"]),
                        row["conversation_id"] or "")  # fmt: skip


def _chat(row: Any) -> VectorRecord:
    user, conversation = row["user_id"], row["conversation_id"]
    return VectorRecord(chat_key(user, row["run_id"]), user, "chat", list(row["vector"]),
                        conversation)  # fmt: skip


# table, its other columns, its vector column, the id before the first, the record of a row
_SOURCES: tuple[tuple[str, str, str, object, Callable[[Any], VectorRecord]], ...] = (
    ("memory_items", "user_id, layer, conversation_id", "embedding", "", _item),
    ("memory_chats", "user_id, run_id, conversation_id", "embedding", 0, _chat),
)
