"""PostgreSQL storage of conversations and their turns; every query names the user."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import asyncpg

from ..db import Database

TitleSource = Literal["auto", "user"]


@dataclass(frozen=True)
class Conversation:
    """One conversation of a user, as listed."""

    conversation_id: str  # the bus-wide id
    client_id: str  # the id the client knows
    title: str
    title_source: TitleSource
    private: bool
    created_at: datetime
    updated_at: datetime
    key: int = 0  # the row's serial: the tie-break of the list order

    def public(self) -> dict[str, Any]:
        """The conversation as the API shows it."""
        return {
            "conversation_id": self.client_id,
            "title": self.title,
            "title_source": self.title_source,
            "private": self.private,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class StoredTurn:
    """One turn of a conversation: the user's message and the answer."""

    run_id: str
    user_text: str
    assistant_text: str
    created_at: datetime
    private: bool = False
    sources: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    route: str | None = None

    def messages(self) -> list[dict[str, Any]]:
        """The turn as the API's messages: the user's, one `tool` message per tool call,
        then the assistant's with its sources and steps (shaped like the `step` frames)."""
        ids = {"run_id": self.run_id, "created_at": self.created_at.isoformat()}
        tools = [{"role": "tool", "text": o["content"], "tool": o["tool"],
                  "arguments": o.get("arguments", {}), "is_error": o.get("is_error", False),
                  **ids} for o in self.observations]  # fmt: skip
        answer = {"role": "assistant", "text": self.assistant_text, "sources": self.sources,
                  "steps": self.steps(), "route": self.route, **ids}  # fmt: skip
        return [{"role": "user", "text": self.user_text, **ids}, *tools, answer]

    def steps(self) -> list[dict[str, Any]]:
        """The turn's visible steps: retrieval (its sources), then each tool action and its
        observation, as `{"kind", "content", "tool"}`."""
        found: list[dict[str, Any]] = []
        if self.sources:
            names = ", ".join(dict.fromkeys(str(p.get("source", "")) for p in self.sources))
            found.append({"kind": "retrieval", "content": names, "tool": None})
        for o in self.observations:
            action = json.dumps(o.get("arguments", {}), ensure_ascii=False)
            found.append({"kind": "action", "content": action, "tool": o["tool"]})
            found.append({"kind": "observation", "content": o["content"], "tool": o["tool"]})
        return found


def encode_cursor(conversation: Conversation) -> str:
    """An opaque cursor: the position after `conversation` in the list."""
    raw = f"{conversation.updated_at.isoformat()}|{conversation.key}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The position a cursor names; ValueError when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, key = raw.split("|")
        return datetime.fromisoformat(at), int(key)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("bad cursor") from exc


def _conversation(row: asyncpg.Record) -> Conversation:
    return Conversation(
        row["conversation_id"], row["client_id"], row["title"], row["title_source"],
        row["private"], row["created_at"], row["updated_at"], row["id"],
    )  # fmt: skip


def _turn(row: asyncpg.Record) -> StoredTurn:
    return StoredTurn(
        row["run_id"], row["user_text"], row["assistant_text"], row["created_at"],
        row["private"], json.loads(row["sources"]), json.loads(row["observations"]), row["route"],
    )  # fmt: skip


_COLUMNS = "conversation_id, client_id, title, title_source, private, created_at, updated_at, id"


# Creates the conversation, or bumps it; one deleted before the turn happened ($5) starts
# afresh, one deleted after it stays deleted (the turn is a redelivery or was in flight).
# Every right-hand side reads the row as it was.
_ADD_TURN = """
WITH c AS (
    INSERT INTO memory_conversations AS c
        (user_id, conversation_id, client_id, private, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $5)
    ON CONFLICT (user_id, conversation_id) DO UPDATE SET
        deleted = c.deleted AND c.deleted_at >= $5,
        created_at = CASE WHEN c.deleted AND c.deleted_at < $5 THEN $5 ELSE c.created_at END,
        private = CASE WHEN c.deleted AND c.deleted_at < $5 THEN $4 ELSE c.private END,
        updated_at = CASE WHEN c.deleted AND c.deleted_at >= $5 THEN c.updated_at
                          ELSE GREATEST(c.updated_at, $5) END
    RETURNING deleted
), t AS (
    INSERT INTO memory_conversation_turns (user_id, run_id, conversation_id, user_text,
        assistant_text, sources, observations, route, private, created_at)
    SELECT $1, $6, $2, $7, $8, $9::jsonb, $10::jsonb, $11, $4, $5
    WHERE NOT (SELECT deleted FROM c)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM t)
"""


class ConversationStore:
    """`memory_conversations` and `memory_conversation_turns`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self, user_id: str, conversation_id: str, client_id: str, title: str, at: datetime
    ) -> Conversation | None:
        """Create a conversation (a user's title when `title` is set); the existing one when
        it exists, None when it was deleted."""
        source = "user" if title else "auto"
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_conversations (user_id, conversation_id, client_id, title,"
                " title_source, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$6)"
                " ON CONFLICT DO NOTHING",
                user_id, conversation_id, client_id, title, source, at,
            )  # fmt: skip
        return await self.get(user_id, conversation_id)

    async def add_turn(
        self, user_id: str, conversation_id: str, client_id: str, turn: StoredTurn
    ) -> bool:
        """Store a turn, creating its conversation (again, when it was deleted before the
        turn) and bumping its `updated_at`; False when the run was stored before or the
        conversation was deleted after the turn happened."""
        async with self._db.connection() as conn:  # one statement: one round trip, atomic
            added = await conn.fetchval(
                _ADD_TURN, user_id, conversation_id, client_id, turn.private, turn.created_at,
                turn.run_id, turn.user_text, turn.assistant_text, json.dumps(turn.sources),
                json.dumps(turn.observations), turn.route,
            )  # fmt: skip
        return bool(added)

    async def get(self, user_id: str, conversation_id: str) -> Conversation | None:
        """The user's conversation, unless deleted."""
        async with self._db.connection() as conn:
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM memory_conversations"  # noqa: S608 - constant columns
                " WHERE user_id = $1 AND conversation_id = $2 AND NOT deleted",
                user_id,
                conversation_id,
            )
        return _conversation(row) if row else None

    async def of_user(
        self, user_id: str, limit: int, before: tuple[datetime, int] | None = None
    ) -> list[Conversation]:
        """The user's conversations, most recently updated first, after the `before` cursor."""
        at, key = before or (None, None)
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM memory_conversations"  # noqa: S608 - constant columns
                " WHERE user_id = $1 AND NOT deleted AND ($2::timestamptz IS NULL"
                " OR (updated_at, id) < ($2, $3)) ORDER BY updated_at DESC, id DESC LIMIT $4",
                user_id, at, key, limit,
            )  # fmt: skip
        return [_conversation(r) for r in rows]

    async def turns(self, user_id: str, conversation_id: str) -> list[StoredTurn]:
        """The conversation's turns in order."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT run_id, user_text, assistant_text, created_at, private, sources,"
                " observations, route"
                " FROM memory_conversation_turns WHERE user_id = $1 AND conversation_id = $2"
                " ORDER BY id",
                user_id,
                conversation_id,
            )
        return [_turn(r) for r in rows]

    async def set_title(
        self, user_id: str, conversation_id: str, title: str, source: TitleSource
    ) -> bool:
        """Set the title; an automatic one only while there is no title yet. True when set."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "UPDATE memory_conversations SET title = $3, title_source = $4"
                " WHERE user_id = $1 AND conversation_id = $2 AND NOT deleted"
                " AND ($4 = 'user' OR (title_source = 'auto' AND title = ''))",
                user_id, conversation_id, title, source,
            )  # fmt: skip
        return bool(status.endswith(" 1"))

    async def delete(
        self, user_id: str, conversation_id: str, at: datetime
    ) -> tuple[bool, list[str]]:
        """Mark the conversation deleted and delete its turns, chats and session; whether it
        existed, and the run ids of the chats deleted (their vectors go too)."""
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "UPDATE memory_conversations SET deleted = true, deleted_at = $3, title = '',"
                " title_source = 'auto' WHERE user_id = $1 AND conversation_id = $2"
                " AND NOT deleted",
                user_id,
                conversation_id,
                at,
            )
            runs = await conn.fetch(
                "DELETE FROM memory_chats WHERE user_id = $1 AND conversation_id = $2"
                " RETURNING run_id",
                user_id,
                conversation_id,
            )
            for table in ("memory_conversation_turns", "memory_sessions"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE user_id = $1"  # noqa: S608 - constant names
                    " AND conversation_id = $2",
                    user_id,
                    conversation_id,
                )
        return bool(status.endswith(" 1")), [r["run_id"] for r in runs]

    async def prune_private(self, before: datetime) -> int:
        """Delete private turns from before `before`, and private conversations idle since
        then (their title is the user's words too); the number of turns deleted."""
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "DELETE FROM memory_conversation_turns WHERE private AND created_at < $1",
                before,
            )
            await conn.execute(
                "UPDATE memory_conversations SET deleted = true, deleted_at = $1, title = '',"
                " title_source = 'auto' WHERE private AND NOT deleted AND updated_at < $1",
                before,
            )
        return int(status.split()[-1])
