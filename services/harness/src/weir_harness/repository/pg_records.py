"""PostgreSQL statements of a run's record beyond its state: ending it (diagnosis and
verdict), its outcome columns, the user's tool policies, and the retention and "forget me"
deletions (private text scrubbed, old step payloads pruned)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from weir_harness.confirmation import NO_POLICIES, Policies, PolicyDecision
from weir_harness.models import Run
from weir_harness.repository.pending import InOrder


class RecordStatements:
    """The record, policy and retention statements of one transaction (see `RunTx`)."""

    _conn: InOrder
    _namespace: str

    async def delete_user_runs(self, user_id: str) -> int:
        """Delete the user's runs (their steps cascade) and their outbox rows not published
        yet (commands and replies carrying the user's text); the number of runs deleted."""
        await self._conn.execute(
            "DELETE FROM outbox WHERE run_id IN (SELECT run_id FROM runs WHERE user_id = $1)",
            user_id,
        )
        status = await self._conn.execute("DELETE FROM runs WHERE user_id = $1", user_id)
        await self._conn.execute("DELETE FROM tool_policies WHERE user_id = $1", user_id)
        return int(status.split()[-1])

    async def tool_policies(self, run: Run) -> Policies:
        """The run's user's tool policies, as they apply to the run's conversation."""
        if run.user_id is None:
            return NO_POLICIES
        rows = await self._conn.fetch(
            "SELECT conversation_id, tool, decision FROM tool_policies"
            " WHERE user_id = $1 AND (conversation_id IS NULL OR conversation_id = $2)",
            run.user_id,
            run.conversation_id,
        )
        found = [(r["conversation_id"], r["tool"], r["decision"]) for r in rows]
        return Policies.of_rows(found, run.conversation_id)

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        """Set the user's policy for `tool` in one conversation (None: in every one)."""
        await self._conn.execute(
            "INSERT INTO tool_policies"
            " (user_id, conversation_id, tool, decision, client_conversation_id)"
            " VALUES ($1, $2, $3, $4, $5)"
            " ON CONFLICT (user_id, (coalesce(conversation_id, '')), tool)"
            " DO UPDATE SET decision = excluded.decision, updated_at = now(),"
            " client_conversation_id = excluded.client_conversation_id",
            user_id,
            conversation_id,
            tool,
            decision,
            client_conversation_id if conversation_id is not None else None,
        )

    async def _blank_steps(self, run_ids: list[str], marker: str) -> None:
        """Replace the step payloads of `run_ids` with `{marker: true}` (rows stay)."""
        await self._conn.execute(
            "UPDATE run_steps SET payload = jsonb_build_object($2::text, true)"
            " WHERE run_id = ANY($1::text[])",
            run_ids,
            marker,
        )

    async def scrub_private(self, ended_before: datetime, limit: int = 500) -> int:
        """Remove the text of private runs that ended before `ended_before`: the message
        from the request, everything but route, intent and offline from the state, every
        step payload. Status, timings and ids stay. The number of runs scrubbed."""
        rows = await self._conn.fetch(
            "SELECT run_id FROM runs WHERE (request ->> 'private') = 'true'"
            " AND NOT (request ? 'scrubbed_at') AND status IN ('completed', 'failed')"
            " AND updated_at < $1 AND namespace IN ($2, '')"
            " ORDER BY updated_at LIMIT $3 FOR UPDATE SKIP LOCKED",
            ended_before,
            self._namespace,
            limit,
        )
        ids = [r["run_id"] for r in rows]
        if not ids:
            return 0
        await self._blank_steps(ids, "scrubbed")
        await self._conn.execute(
            "UPDATE runs SET request = (request - 'text')"
            " || jsonb_build_object('scrubbed_at', to_jsonb(now())),"
            " state = jsonb_strip_nulls(jsonb_build_object('route', state -> 'route',"
            " 'intent', state -> 'intent', 'offline', state -> 'offline'))"
            " WHERE run_id = ANY($1::text[])",
            ids,
        )
        return len(ids)

    async def end(self, run_id: str, diagnosis: dict[str, Any], verdict: dict[str, Any]) -> None:
        """Mark the run ended now, with its diagnosis and verdict (`weir_harness.diagnosis`)."""
        await self._conn.execute(
            "UPDATE runs SET ended_at = now(), diagnosis = $2, verdict = $3,"
            " verdict_evidence = $4 WHERE run_id = $1",
            run_id,
            diagnosis,
            verdict["verdict"],
            verdict["evidence"],
        )

    async def prune_steps(self, ended_before: datetime, limit: int = 500) -> int:
        """Replace the step payloads of runs that ended before `ended_before` with
        `{"pruned": true}`; the rows (kinds, steps, times) and the run's diagnosis and
        verdict stay. The number of runs pruned."""
        rows = await self._conn.fetch(
            "SELECT run_id FROM runs WHERE steps_pruned_at IS NULL AND ended_at IS NOT NULL"
            " AND ended_at < $1 AND namespace IN ($2, '')"
            " ORDER BY ended_at LIMIT $3 FOR UPDATE SKIP LOCKED",
            ended_before,
            self._namespace,
            limit,
        )
        ids = [r["run_id"] for r in rows]
        if not ids:
            return 0
        await self._blank_steps(ids, "pruned")
        await self._conn.execute(
            "UPDATE runs SET steps_pruned_at = now() WHERE run_id = ANY($1::text[])", ids
        )
        return len(ids)

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        """The run's record columns (see `RunRepository.outcome`)."""
        row = await self._conn.fetchrow(
            "SELECT created_at, ended_at, diagnosis, verdict, verdict_evidence, steps_pruned_at"
            " FROM runs WHERE run_id = $1",
            run_id,
        )
        if row is None:
            return None
        found = dict(row)
        verdict, evidence = found.pop("verdict"), found.pop("verdict_evidence")
        found["verdict"] = {"verdict": verdict, "evidence": evidence or []} if verdict else None
        return found
