"""The list of runs for ops (F41): filters, recent first, keyset pages with an opaque cursor."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

import asyncpg
from pydantic import BaseModel, Field

MAX_LIMIT = 100
PREVIEW_CHARS = 120


class CursorError(ValueError):
    """A `before` cursor this service did not make."""


class RunQuery(BaseModel):
    """Which runs to list; every filter is optional."""

    user: str | None = None
    conversation: str | None = None
    status: list[str] = Field(default_factory=list, description="Any of these run states.")
    verdict: str | None = None
    since: datetime | None = Field(default=None, description="Created at or after.")
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT)
    before: str | None = Field(default=None, description="The `next` cursor of a page.")


def encode_cursor(created_at: datetime, run_id: str) -> str:
    """The opaque position after the run (`created_at`, `run_id`) in the recent-first order."""
    raw = json.dumps([created_at.isoformat(), run_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor of `encode_cursor` holds; CursorError for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, run_id = json.loads(raw)
        return datetime.fromisoformat(at), str(run_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise CursorError("not a cursor of this list") from exc


def _where(query: RunQuery) -> tuple[str, list[Any]]:
    conditions: list[str] = []
    params: list[Any] = []

    def add(condition: str, value: Any) -> None:
        params.append(value)
        conditions.append(condition.format(n=f"${len(params)}"))

    if query.user is not None:
        add("user_id = {n}", query.user)
    if query.conversation is not None:
        add("conversation_id = {n}", query.conversation)
    if query.status:
        add("status = ANY({n}::text[])", query.status)
    if query.verdict is not None:
        add("verdict = {n}", query.verdict)
    if query.since is not None:
        add("created_at >= {n}", query.since)
    if query.before is not None:
        at, run_id = decode_cursor(query.before)
        params.extend([at, run_id])
        conditions.append(f"(created_at, run_id) < (${len(params) - 1}, ${len(params)})")
    return (" WHERE " + " AND ".join(conditions)) if conditions else "", params


async def list_page(
    conn: asyncpg.Connection, query: RunQuery
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `query`, recent first, and the cursor of the next (None: no more)."""
    where, params = _where(query)
    params.extend([query.limit + 1, PREVIEW_CHARS])
    # `where` holds only this module's conditions with numbered parameters: no input
    sql = (
        "SELECT run_id, user_id, conversation_id, status, created_at, ended_at,"  # noqa: S608
        " state ->> 'route' AS route, state ->> 'intent' AS intent, diagnosis, verdict,"
        " verdict_evidence, (request ->> 'private') = 'true' AS private,"
        f" left(request ->> 'text', ${len(params)}) AS text_preview FROM runs{where}"
        f" ORDER BY created_at DESC, run_id DESC LIMIT ${len(params) - 1}"
    )
    rows = await conn.fetch(sql, *params)
    items = [_item(row) for row in rows[: query.limit]]
    last = rows[query.limit - 1] if len(rows) > query.limit else None
    return items, encode_cursor(last["created_at"], last["run_id"]) if last else None


def _item(row: asyncpg.Record) -> dict[str, Any]:
    found = dict(row)
    private = found.pop("private")
    verdict, evidence = found.pop("verdict"), found.pop("verdict_evidence")
    found["verdict"] = {"verdict": verdict, "evidence": evidence or []} if verdict else None
    if private:  # a private run's text is not shown in lists
        found["text_preview"] = None
    return found
