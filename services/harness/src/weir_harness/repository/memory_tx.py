"""The statements of one transaction over the in-memory tables (see `memory`)."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from weir_common.events import Event
from weir_harness.confirmation import NO_POLICIES, Policies, PolicyDecision
from weir_harness.models import ACTIVE, Run, RunStatus
from weir_harness.repository.memory_tables import Tables, before

__all__ = ["MemoryRunTx"]

_ENDED = (RunStatus.COMPLETED.value, RunStatus.FAILED.value)
_ACTIVE = tuple(status.value for status in ACTIVE)
_RUN_FIELDS = tuple(Run.model_fields)


def _to_run(row: dict[str, Any]) -> Run:
    return Run.model_validate(copy.deepcopy({name: row[name] for name in _RUN_FIELDS}))


def _columns(run: Run) -> dict[str, Any]:
    found = run.model_dump(mode="json", include=set(_RUN_FIELDS))
    for name in ("deadline", "retry_at"):  # timestamptz columns: datetimes, not text
        found[name] = getattr(run, name)
    return found


class MemoryRunTx:
    """The statements of one transaction over the in-memory tables (a `RunTransaction`)."""

    def __init__(self, tables: Tables, namespace: str, now: datetime) -> None:
        self._t = tables
        self._namespace = namespace
        self._now = now  # PostgreSQL's now(): the transaction's start
        self._outbox_ids: list[int] = []

    def _mine(self, row: dict[str, Any]) -> bool:
        return row["namespace"] in (self._namespace, "")

    async def first_time(self, event_id: str) -> bool:
        if event_id in self._t.processed:
            return False
        self._t.processed.add(event_id)
        return True

    async def first_get(self, event_id: str, run_id: str) -> Run | None:
        return await self.get(run_id) if await self.first_time(event_id) else None

    async def insert(self, run: Run) -> bool:
        if run.run_id in self._t.runs:
            return False
        self._t.runs[run.run_id] = {
            **_columns(run),
            "namespace": self._namespace,
            "seq": self._t.next_id,
            "created_at": self._now,
            "updated_at": self._now,
            "ended_at": None,
            "diagnosis": None,
            "verdict": None,
            "verdict_evidence": None,
            "steps_pruned_at": None,
        }
        self._t.next_id += 1
        return True

    async def get(self, run_id: str) -> Run | None:
        row = self._t.runs.get(run_id)
        return _to_run(row) if row is not None else None

    async def save(self, run: Run) -> None:
        row = self._t.runs.get(run.run_id)
        if row is not None:
            row.update(_columns(run), updated_at=self._now)

    async def add_step(
        self, run: Run, kind: str, event_id: str, payload: dict[str, Any], step: str | None = None
    ) -> None:
        if run.run_id not in self._t.runs:  # the foreign key of run_steps
            raise KeyError(f"no run {run.run_id!r} for its step")
        log = self._t.steps.setdefault(run.run_id, [])
        log.append(
            {
                "seq": len(log) + 1,
                "step": step or run.step or "",
                "attempt": run.attempt,
                "kind": kind,
                "event_id": event_id,
                "payload": copy.deepcopy(payload),
                "created_at": self._now,
            }
        )

    async def step_log(self, run_id: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self._t.steps.get(run_id, []))

    async def lock_conversation(self, conversation_id: str) -> None:
        """Nothing to do: every transaction of this store holds the database's lock."""

    def _of_conversation(self, conversation_id: str, *statuses: str) -> list[dict[str, Any]]:
        rows = [r for r in self._t.runs.values() if r["conversation_id"] == conversation_id]
        return sorted((r for r in rows if r["status"] in statuses), key=_created)

    async def awaiting_confirmation(self, conversation_id: str) -> Run | None:
        waiting = RunStatus.AWAITING_CONFIRMATION.value
        rows = self._of_conversation(conversation_id, waiting)
        return _to_run(rows[0]) if rows else None

    async def has_active(self, conversation_id: str, other_than: str) -> bool:
        rows = self._of_conversation(conversation_id, *_ACTIVE)
        return any(row["run_id"] != other_than for row in rows)

    async def next_queued(self, conversation_id: str) -> Run | None:
        rows = self._of_conversation(conversation_id, RunStatus.QUEUED.value)
        return _to_run(rows[0]) if rows else None

    async def due(self, now: datetime, limit: int = 50) -> list[Run]:
        rows = [
            row
            for row in self._t.runs.values()
            if row["status"] in _ACTIVE
            and self._mine(row)
            and (_at_or_before(row["deadline"], now) or _at_or_before(row["retry_at"], now))
        ]
        rows.sort(key=lambda row: (row["deadline"] is None, row["deadline"] or now, row["seq"]))
        return [_to_run(row) for row in rows[:limit]]

    async def enqueue(self, event: Event, topic: str | None, traceparent: str | None) -> None:
        self._t.outbox.append(
            {
                "id": self._t.next_id,
                "namespace": self._namespace,
                "run_id": event.run_id or "",
                "topic": topic,
                "event": event.model_dump(mode="json"),
                "traceparent": traceparent,
            }
        )
        self._outbox_ids.append(self._t.next_id)
        self._t.next_id += 1

    @property
    def outbox_ids(self) -> list[int]:
        return list(self._outbox_ids)

    async def end(self, run_id: str, diagnosis: dict[str, Any], verdict: dict[str, Any]) -> None:
        row = self._t.runs.get(run_id)
        if row is not None:
            row["ended_at"] = self._now
            row["diagnosis"] = copy.deepcopy(diagnosis)
            row["verdict"] = verdict["verdict"]
            row["verdict_evidence"] = copy.deepcopy(verdict["evidence"])

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        row = self._t.runs.get(run_id)
        if row is None:
            return None
        verdict, evidence = row["verdict"], row["verdict_evidence"]
        return {
            "created_at": row["created_at"],
            "ended_at": row["ended_at"],
            "diagnosis": copy.deepcopy(row["diagnosis"]),
            "steps_pruned_at": row["steps_pruned_at"],
            "verdict": (
                {"verdict": verdict, "evidence": copy.deepcopy(evidence) or []} if verdict else None
            ),
        }

    async def tool_policies(self, run: Run) -> Policies:
        if run.user_id is None:
            return NO_POLICIES
        found = [
            (row["conversation_id"], row["tool"], row["decision"])
            for row in self._t.policies.values()
            if row["user_id"] == run.user_id
            and row["conversation_id"] in (None, run.conversation_id)
        ]
        return Policies.of_rows(found, run.conversation_id)

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        self._t.policies[(user_id, conversation_id or "", tool)] = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "client_conversation_id": client_conversation_id if conversation_id else None,
            "tool": tool,
            "decision": decision,
            "updated_at": self._now,
        }

    async def delete_user_runs(self, user_id: str) -> int:
        gone = {rid for rid, row in self._t.runs.items() if row["user_id"] == user_id}
        self._t.outbox = [row for row in self._t.outbox if row["run_id"] not in gone]
        for run_id in gone:
            del self._t.runs[run_id]
            self._t.steps.pop(run_id, None)
        self._t.policies = {k: v for k, v in self._t.policies.items() if k[0] != user_id}
        return len(gone)

    def _blank_steps(self, run_ids: list[str], marker: str) -> None:
        for run_id in run_ids:
            for entry in self._t.steps.get(run_id, []):
                entry["payload"] = {marker: True}

    async def scrub_private(self, ended_before: datetime, limit: int = 500) -> int:
        rows = [
            row
            for row in self._t.runs.values()
            if row["request"].get("private") is True
            and "scrubbed_at" not in row["request"]
            and row["status"] in _ENDED
            and before(row["updated_at"], ended_before)
            and self._mine(row)
        ]
        rows = sorted(rows, key=lambda row: (row["updated_at"], row["seq"]))[:limit]
        self._blank_steps([row["run_id"] for row in rows], "scrubbed")
        for row in rows:
            request = {k: v for k, v in row["request"].items() if k != "text"}
            row["request"] = {**request, "scrubbed_at": self._now.isoformat()}
            kept = {k: row["state"].get(k) for k in ("route", "intent", "offline")}
            row["state"] = {k: v for k, v in kept.items() if v is not None}
        return len(rows)

    async def prune_steps(self, ended_before: datetime, limit: int = 500) -> int:
        rows = [
            row
            for row in self._t.runs.values()
            if row["steps_pruned_at"] is None
            and before(row["ended_at"], ended_before)
            and self._mine(row)
        ]
        rows = sorted(rows, key=lambda row: (row["ended_at"], row["seq"]))[:limit]
        self._blank_steps([row["run_id"] for row in rows], "pruned")
        for row in rows:
            row["steps_pruned_at"] = self._now
        return len(rows)


def _created(row: dict[str, Any]) -> tuple[datetime, int]:
    return row["created_at"], row["seq"]


def _at_or_before(moment: datetime | None, now: datetime) -> bool:
    return moment is not None and moment <= now
