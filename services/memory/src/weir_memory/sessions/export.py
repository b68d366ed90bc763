"""Seed 001's export: MongoDB-style nested JSON, versioned, incremental.

Sessions carry their chats; an export `since` a time holds only sessions updated after it
and only their newer chats, and `merge` folds such an increment into an earlier export by
session UUID (chats accumulate, nothing is duplicated). The profile and the long-term
memories come along whole in every export, so an export is everything remembered about the
user: consolidation merges, expires and deletes memories, and an increment of them would
keep those forever in the merged file.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from .repository import Chat, Session

if TYPE_CHECKING:
    from ..longterm.service import LongTermMemory

VERSION = 1


def _epoch(at: datetime) -> int:
    return int(at.timestamp())


def _chat(chat: Chat, session_id: int) -> dict[str, Any]:
    return {
        "id": chat.id,
        "session_id": session_id,
        "run_id": chat.run_id,
        "user_input": chat.user_input,
        "ai_replies": [chat.ai_reply] if chat.ai_reply else [],
        "summary": chat.summary,
        "created_at": _epoch(chat.created_at),
        "updated_at": _epoch(chat.created_at),
    }


def _session(session: Session, chats: list[Chat]) -> dict[str, Any]:
    return {
        "id": session.id,
        "uuid": session.conversation_id,
        "title": session.title,
        "summary": session.summary,
        "chat_ids": [c.id for c in chats],
        "created_at": _epoch(session.created_at),
        "updated_at": _epoch(session.updated_at),
        "chats": [_chat(c, session.id) for c in chats],
    }


async def export_user(
    memory: LongTermMemory, user_id: str, *, since: datetime | None, now: datetime
) -> dict[str, Any]:
    """The user's export document (incremental when `since` is given)."""
    sessions = await memory.sessions.store.of_user(user_id, limit=100_000, since=since)
    chats = await memory.sessions.store.chats(
        user_id, [s.conversation_id for s in sessions], since=since
    )
    by_session: dict[str, list[Chat]] = {}
    for chat in chats:
        by_session.setdefault(chat.conversation_id, []).append(chat)
    items = await memory.semantic.items.of_user(user_id, limit=100_000)
    return {
        "version": VERSION,
        "exported_at": now.isoformat(),
        "since": since.isoformat() if since else None,
        "user_id": user_id,
        "sessions": [
            _session(s, by_session.get(s.conversation_id, [])) for s in reversed(sessions)
        ],
        "profile": await memory.profile.store.rows(user_id),
        "memories": [i.public() for i in items],
    }


def merge(previous: dict[str, Any], increment: dict[str, Any]) -> dict[str, Any]:
    """Fold an incremental export into an earlier one, matching sessions by UUID."""
    sessions = {s["uuid"]: dict(s) for s in previous.get("sessions", [])}
    for new in increment.get("sessions", []):
        old = sessions.get(new["uuid"])
        if old is None:
            sessions[new["uuid"]] = dict(new)
            continue
        known = {c["id"] for c in old["chats"]}
        fresh = [c for c in new["chats"] if c["id"] not in known]
        head = {k: v for k, v in new.items() if k != "chats"}
        sessions[new["uuid"]] = {
            **old,
            **head,
            "chats": [*old["chats"], *fresh],
            "chat_ids": [*old["chat_ids"], *(c["id"] for c in fresh)],
        }
    # the profile and the memories of the increment are the whole current state
    return {**increment, "since": previous.get("since"), "sessions": list(sessions.values())}
