"""The run store's interface: what the run service, the API and the housekeeping need.

Two implementations pass one conformance suite (`tests/test_store_conformance.py`):
:class:`~weir_harness.repository.postgres.RunRepository` (PostgreSQL, the product's) and
:class:`~weir_harness.repository.memory.MemoryRunStore` (in memory, for the state-machine
tests of the unit tier).

Semantics both keep: a transaction commits when its block exits normally and leaves nothing
behind when it raises; transactions over one store are serializable as far as runs of one
conversation go (`lock_conversation`); an event id is processed once (`first_time`); outbox
rows are written in the transaction that decided them; a deployment (namespace) sweeps,
scrubs and prunes only its own runs (and runs of no namespace).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from weir_common.events import Event
from weir_harness.confirmation import Policies, PolicyDecision
from weir_harness.models import Run
from weir_harness.run_list import RunQuery

__all__ = ["RedeliveredError", "RunStore", "RunTransaction", "StaleRunError"]


class StaleRunError(Exception):
    """An optimistic transaction's run changed after it was read: nothing was written; do
    the work again in a locked transaction."""


class RedeliveredError(Exception):
    """An optimistic transaction's event was processed before: nothing was written."""


class RunTransaction(Protocol):
    """The statements of one transaction over runs."""

    async def first_time(self, event_id: str) -> bool:
        """Record `event_id` as processed; False when it already was (a redelivery)."""
        ...

    async def first_get(self, event_id: str, run_id: str) -> Run | None:
        """`first_time(event_id)`, then `get(run_id)` when it was: the run, locked, or None
        on a redelivery or when there is no such run (one round trip where it can be)."""
        ...

    async def insert(self, run: Run) -> bool:
        """Store a new run; False when a run with that id exists."""
        ...

    async def get(self, run_id: str) -> Run | None:
        """The run, locked for this transaction."""
        ...

    async def save(self, run: Run) -> None:
        """Write the run's current state (the snapshot)."""
        ...

    async def add_step(
        self, run: Run, kind: str, event_id: str, payload: dict[str, Any], step: str | None = None
    ) -> None:
        """Append one entry to the run's step log."""
        ...

    async def step_log(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order: seq, step, attempt, kind, event_id, payload,
        created_at."""
        ...

    async def lock_conversation(self, conversation_id: str) -> None:
        """Serialize, until commit, the transactions that start or end runs of a
        conversation."""
        ...

    async def awaiting_confirmation(self, conversation_id: str) -> Run | None:
        """The conversation's run that waits for a confirmation (None: none does)."""
        ...

    async def has_active(self, conversation_id: str, other_than: str) -> bool:
        """True when another run of the conversation is running, waiting or finishing."""
        ...

    async def next_queued(self, conversation_id: str) -> Run | None:
        """The oldest queued run of the conversation."""
        ...

    async def due(self, now: datetime, limit: int = 50) -> list[Run]:
        """This deployment's active runs whose deadline or retry time has come."""
        ...

    async def enqueue(self, event: Event, topic: str | None, traceparent: str | None) -> None:
        """Add `event` to the outbox: published by the relay once this transaction commits."""
        ...

    @property
    def outbox_ids(self) -> list[int]:
        """The outbox ids of the events enqueued, in their order (complete once the
        transaction committed)."""
        ...

    async def end(self, run_id: str, diagnosis: dict[str, Any], verdict: dict[str, Any]) -> None:
        """Mark the run ended now, with its diagnosis and verdict."""
        ...

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        """The run's record columns: created_at, ended_at, diagnosis, verdict (None while
        it runs), steps_pruned_at."""
        ...

    async def tool_policies(self, run: Run) -> Policies:
        """The run's user's tool policies, as they apply to the run's conversation."""
        ...

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        """Set the user's policy for `tool` in one conversation (None: in every one)."""
        ...

    async def delete_user_runs(self, user_id: str) -> int:
        """Delete the user's runs, their steps, unpublished outbox rows and tool policies;
        the number of runs deleted."""
        ...

    async def scrub_private(self, ended_before: datetime, limit: int = 500) -> int:
        """Remove the text of private runs that ended before `ended_before`; how many."""
        ...

    async def prune_steps(self, ended_before: datetime, limit: int = 500) -> int:
        """Blank the step payloads of runs that ended before `ended_before`; how many."""
        ...


class RunStore(Protocol):
    """All access to the harness's own persistence: runs, steps, outbox, tool policies."""

    async def open(self) -> None:
        """Make the store ready (connect, migrate)."""
        ...

    async def close(self) -> None:
        """Release the store's resources."""
        ...

    def transaction(
        self, *, optimistic: bool = False
    ) -> AbstractAsyncContextManager[RunTransaction]:
        """One transaction; committed when the block exits normally, rolled back on error.

        `optimistic`: `first_get` may read its run without a lock, and the block (or its
        exit) then raises `StaleRunError` when the run changed meanwhile, or `RedeliveredError` when
        the event was processed before, having written nothing (a store may always lock)."""
        ...

    async def any_due(self, now: datetime) -> bool:
        """Whether `RunTransaction.due(now)` would find a run (without locking any)."""
        ...

    async def steps(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order."""
        ...

    async def record(self, run_id: str) -> tuple[Run, list[dict[str, Any]]] | None:
        """A run and its step log; None when unknown."""
        ...

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        """The run's record columns (see `RunTransaction.outcome`)."""
        ...

    async def unpublished(self) -> list[dict[str, Any]]:
        """This deployment's outbox rows not published yet, oldest first: run_id, topic,
        event (JSON), traceparent."""
        ...

    async def scrub_private(self, retention_s: float) -> int:
        """Scrub the text of private runs that ended more than `retention_s` ago."""
        ...

    async def prune_steps(self, retention_days: float) -> int:
        """Prune the step payloads of runs that ended more than `retention_days` ago."""
        ...

    async def forget_user(self, user_id: str) -> int:
        """Delete every run of a user ("forget me"); how many runs went."""
        ...

    async def policies(self, user_id: str) -> list[dict[str, Any]]:
        """Every tool policy of a user: conversation_id, client_conversation_id, tool,
        decision, updated_at; the policies of every conversation first, then by tool."""
        ...

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        """Set one tool policy of a user."""
        ...

    async def delete_policy(self, user_id: str, conversation_id: str | None, tool: str) -> bool:
        """Remove one tool policy; False when there was none."""
        ...

    async def list_runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One page of runs, recent first, and the cursor of the next page (None: last)."""
        ...
