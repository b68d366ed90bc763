"""Turns recorded but not yet analysed (`memory_pending`), and the worker that analyses them.

`turn.recorded` answers once a turn is in short-term memory and has its row here; the
long-term part (analysis, embeddings, the session and the memory, consolidation) runs later
in :class:`AnalysisWorker`, in batches: the texts of a whole batch are embedded at once,
then the turns are written one by one in the order they were recorded (so one
conversation's turns are analysed in order). A turn's row is deleted only after its
long-term part is done; a service killed in between finds the row again when it starts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from weir_common.events import Turn

from ..db import Database

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PendingTurn:
    """One recorded turn waiting for its long-term part."""

    seq: int
    user_id: str
    conversation_id: str
    turn: Turn
    occurred_at: datetime
    recent: list[Turn]


class PendingStore:
    """`memory_pending`; `added` is set whenever a turn is added in this process."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.added = asyncio.Event()
        # user → {run: conversation} of the turns added here, not yet analysed
        self._waiting: dict[str, dict[str, str]] = {}
        self._changed = asyncio.Condition()

    async def add(
        self, user_id: str, conversation_id: str, turn: Turn, at: datetime, recent: Sequence[Turn]
    ) -> None:
        """Mark a turn for analysis (a redelivered turn keeps its first mark)."""
        before = json.dumps([t.model_dump(mode="json") for t in recent])
        async with self._db.connection() as conn:
            status = await conn.execute(
                "INSERT INTO memory_pending (user_id, run_id, conversation_id, user_text,"
                " assistant_text, occurred_at, recent) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)"
                " ON CONFLICT (user_id, run_id) DO NOTHING",
                user_id, turn.run_id, conversation_id, turn.user, turn.assistant, at, before,
            )  # fmt: skip
        if status.endswith(" 1"):
            self._waiting.setdefault(user_id, {})[turn.run_id] = conversation_id
        self.added.set()

    async def settled(
        self, user_id: str, timeout_s: float, conversation_id: str | None = None
    ) -> bool:
        """Wait (at most `timeout_s`) until the turns of `user_id` recorded in this process
        are analysed, so the next context reads them; False when the wait timed out.

        The turns of `conversation_id` are not waited for: the context of that conversation
        carries them already, as its short-term history (so back-to-back turns of one chat
        never queue behind the analysis of the turn before)."""

        def settled_now() -> bool:
            runs = self._waiting.get(user_id, {})
            return all(conversation == conversation_id for conversation in runs.values())

        if settled_now():
            return True
        async with self._changed:
            try:
                async with asyncio.timeout(timeout_s):
                    await self._changed.wait_for(settled_now)
            except TimeoutError:
                timed_out = True
            else:
                timed_out = False
        if timed_out:  # e.g. forgotten ("forget me" deletes the user's rows)
            await self.prune()
        return not timed_out

    async def prune(self) -> None:
        """Stop waiting for runs whose rows are gone without an analysis by this process
        ("forget me" deletes them). A run is in `_waiting` only after its row was written,
        so a run of the snapshot missing from the table is gone for good."""
        snapshot = {user: set(runs) for user, runs in self._waiting.items()}
        if not snapshot:
            return
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT user_id, run_id FROM memory_pending WHERE user_id = ANY($1::text[])",
                list(snapshot),
            )
        present = {(r["user_id"], r["run_id"]) for r in rows}
        for user, runs in snapshot.items():
            current = self._waiting.get(user)
            if current is not None:
                for run in runs - {r for u, r in present if u == user}:
                    current.pop(run, None)
                if not current:
                    del self._waiting[user]
        async with self._changed:
            self._changed.notify_all()

    async def take(self, limit: int) -> list[PendingTurn]:
        """The oldest `limit` pending turns, in the order they were recorded."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT seq, user_id, run_id, conversation_id, user_text, assistant_text,"
                " occurred_at, recent FROM memory_pending ORDER BY seq LIMIT $1",
                limit,
            )
        return [
            PendingTurn(
                seq=r["seq"], user_id=r["user_id"], conversation_id=r["conversation_id"],
                turn=Turn(run_id=r["run_id"], user=r["user_text"], assistant=r["assistant_text"]),
                occurred_at=r["occurred_at"],
                recent=[Turn.model_validate(t) for t in json.loads(r["recent"])],
            )
            for r in rows
        ]  # fmt: skip

    async def done(self, user_id: str, run_id: str) -> None:
        """The turn's long-term part is done."""
        async with self._db.connection() as conn:
            await conn.execute(
                "DELETE FROM memory_pending WHERE user_id = $1 AND run_id = $2", user_id, run_id
            )
        runs = self._waiting.get(user_id)
        if runs is not None:
            runs.pop(run_id, None)
            if not runs:
                del self._waiting[user_id]
            async with self._changed:
                self._changed.notify_all()

    async def count(self) -> int:
        """Turns still waiting."""
        async with self._db.connection() as conn:
            found: int = await conn.fetchval("SELECT count(*) FROM memory_pending")
        return found
