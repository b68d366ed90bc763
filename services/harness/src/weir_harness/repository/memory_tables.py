"""The tables of the in-memory run store: rows as PostgreSQL would hold them (JSON columns as
JSON, times as aware datetimes), and one lock that makes every transaction serializable."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from weir_harness.run_list import PREVIEW_CHARS, RunQuery, decode_cursor, encode_cursor


@dataclass
class Tables:
    """Every table of the store; copied whole at the start of a transaction (rollback)."""

    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    processed: set[str] = field(default_factory=set)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    policies: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    next_id: int = 1  # the outbox's and the runs' insertion order

    def snapshot(self) -> Tables:
        """A deep copy, restored when the transaction raises."""
        return copy.deepcopy(self)


@dataclass
class MemoryDatabase:
    """The "database" that several stores (a harness and the harness after a restart, or two
    deployments) can share: its tables and the lock every transaction holds."""

    tables: Tables = field(default_factory=Tables)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def list_page(tables: Tables, query: RunQuery) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `query`, recent first, and the cursor of the next (as `run_list`)."""
    rows = [row for row in tables.runs.values() if _matches(row, query)]
    if query.before is not None:
        position = decode_cursor(query.before)
        rows = [row for row in rows if (row["created_at"], row["run_id"]) < position]
    rows.sort(key=lambda row: (row["created_at"], row["run_id"]), reverse=True)
    items = [_item(row) for row in rows[: query.limit]]
    last = rows[query.limit - 1] if len(rows) > query.limit else None
    return items, encode_cursor(last["created_at"], last["run_id"]) if last else None


def _matches(row: dict[str, Any], query: RunQuery) -> bool:
    checks = (
        (query.user, row["user_id"]),
        (query.conversation, row["conversation_id"]),
        (query.verdict, row["verdict"]),
    )
    if any(wanted is not None and wanted != value for wanted, value in checks):
        return False
    if query.status and row["status"] not in query.status:
        return False
    return query.since is None or row["created_at"] >= query.since


def _item(row: dict[str, Any]) -> dict[str, Any]:
    request, state = row["request"], row["state"]
    text = request.get("text")
    verdict = row["verdict"]
    return {
        "run_id": row["run_id"],
        "user_id": row["user_id"],
        "conversation_id": row["conversation_id"],
        "status": row["status"],
        "created_at": row["created_at"],
        "ended_at": row["ended_at"],
        "route": _text(state.get("route")),
        "intent": _text(state.get("intent")),
        "diagnosis": copy.deepcopy(row["diagnosis"]),
        "verdict": (
            {"verdict": verdict, "evidence": copy.deepcopy(row["verdict_evidence"]) or []}
            if verdict
            else None
        ),
        "text_preview": (
            None if request.get("private") is True or text is None else str(text)[:PREVIEW_CHARS]
        ),
    }


def _text(value: Any) -> str | None:
    """What PostgreSQL's `->>` gives for a JSON value: its text, None for null."""
    return None if value is None else str(value)


def before(moment: datetime | None, limit: datetime) -> bool:
    """`moment < limit`, false for a NULL moment (as SQL compares)."""
    return moment is not None and moment < limit
