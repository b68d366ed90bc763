"""The run state machine. It decides; the outbox relay publishes what it decided.

Every transition happens in one PostgreSQL transaction: the result is deduped by its event
id, snapshotted, the next command recorded as pending, and every command and reply written
to the outbox, all committed together (a worker's result usually in one guarded statement
on the run as last read, see `repository/pg_optimistic.py`); the relay
(`weir_harness.outbox`) publishes them afterwards, so nothing decided is lost to a crash
between commit and publish. A command
that is lost on its way (a worker crashed) is sent again when its deadline passes, so the
harness is the only place where retries happen.

A restart touches only what is late: nothing is re-sent when the harness starts. A command
whose deadline passed while no harness was running (before this process started) is
re-sent once with the same attempt number, since its silence says nothing about the step;
a deadline that passes while this process runs is a failed attempt as usual.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from weir_common.events import (
    AnswerGenerated,
    ChatRequested,
    Event,
    HarnessResult,
    ReactStepDecided,
    StepFailed,
    ToolConfirmationGiven,
)
from weir_common.metrics import RESULTS_APPLIED
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import (
    CONFIRM,
    NO_POLICIES,
    Outcome,
    PolicyDecision,
    answerable,
    resume,
)
from weir_harness.dispatch import next_for_calls
from weir_harness.driver import Clock, Out, Outgoing, RunDriver, record_of
from weir_harness.models import Run, RunStatus
from weir_harness.repository.store import RedeliveredError, RunStore, RunTransaction, StaleRunError
from weir_harness.settings import HarnessSettings
from weir_harness.steps import FIRST_STEP, GENERATE
from weir_harness.transitions import Decision, decide, out_of_time, stop_for_time

__all__ = ["Clock", "Outgoing", "RunService"]

log = structlog.get_logger(__name__)


class RunService(RunDriver):
    """Drives runs from `chat.requested` to `run.completed` or `run.failed`."""

    def __init__(
        self,
        repo: RunStore,
        settings: HarnessSettings,
        clock: Clock | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        super().__init__(settings, clock, capabilities)
        self._repo = repo
        self._started_at: datetime = self._now()

    async def on_chat(self, event: ChatRequested, traceparent: str | None) -> list[Outgoing]:
        """Open a run for the request; start it unless its conversation is busy."""
        out = Out()
        async with self._repo.transaction() as tx:
            if not await tx.first_time(event.event_id):
                return []
            # Commands copy the request's envelope: give it the run's ids so results come back.
            event = event.model_copy(
                update={
                    "run_id": event.run_id or event.event_id,
                    "conversation_id": event.conversation_id or event.event_id,
                }
            )
            run = Run(
                run_id=event.run_id or event.event_id,
                conversation_id=event.conversation_id or event.event_id,
                user_id=event.user_id,
                status=RunStatus.QUEUED,
                request=event,
                traceparent=traceparent,
            )
            if not await tx.insert(run):
                return []
            await tx.add_step(run, "request", event.event_id, record_of(event), "chat.requested")
            await tx.lock_conversation(run.conversation_id)
            await self._supersede(tx, run, out)
            if not await tx.has_active(run.conversation_id, other_than=run.run_id):
                await self._start(tx, run, out)
            await out.stage(tx)
        return out.committed()

    async def on_result(self, result: HarnessResult) -> list[Outgoing]:
        """Snapshot a worker's result and send the next command: decided on the run as
        last written (no lock held meanwhile), and decided again on the locked run when it
        changed in between."""
        if result.run_id is None:
            return []
        try:
            out = await self._on_result(result, optimistic=True)
        except StaleRunError:
            RESULTS_APPLIED.labels("again").inc()
            log.info("result.decided_again", run_id=result.run_id, type=result.type)
            return await self._on_result(result, optimistic=False)
        except RedeliveredError:
            RESULTS_APPLIED.labels("redelivered").inc()
            return []
        RESULTS_APPLIED.labels("optimistic").inc()
        return out

    async def _on_result(self, result: HarnessResult, *, optimistic: bool) -> list[Outgoing]:
        assert result.run_id is not None
        out = Out()
        async with self._repo.transaction(optimistic=optimistic) as tx:
            run = await tx.first_get(result.event_id, result.run_id)
            if run is None:  # a redelivery, or a run "forget me" deleted
                return []
            self._keep_hint(run, result)
            if run.state.route_sent == result.request_id:
                await self._early_route(tx, run, result)
                return []
            if run.pending_event_id != result.request_id:
                log.info("result.stale", run_id=result.run_id, type=result.type)
                return []
            await tx.add_step(run, "result", result.event_id, record_of(result))
            self._observe_step(run, "failed" if isinstance(result, StepFailed) else "ok", out)
            if isinstance(result, StepFailed):
                await self._failed(tx, run, result.reason, result.transient, out)
            else:
                planned = (isinstance(result, ReactStepDecided) and bool(result.proposed())) or (
                    isinstance(result, AnswerGenerated) and bool(result.tool_calls)
                )
                policies = await tx.tool_policies(run) if planned else NO_POLICIES
                caps = self.capabilities.for_request(run.request)
                await self._apply(tx, run, decide(run, result, caps, self._settings, policies), out)
            await out.stage(tx)
        return out.committed()

    async def on_confirmation(self, given: ToolConfirmationGiven) -> list[Outgoing]:
        """The user's answer for a parked call: send it, or end it as declined."""
        out = Out()
        async with self._repo.transaction() as tx:
            if not await tx.first_time(given.event_id) or given.run_id is None:
                return []
            run = await tx.get(given.run_id)
            why_not = answerable(run, given)
            if run is None or why_not is not None:
                log.info("confirmation.ignored", run_id=given.run_id, why=why_not)
                return []
            wait = run.state.awaiting
            assert wait is not None  # answerable() checked it
            outcome: Outcome = "approved" if given.approve else "denied"
            note = {"decision": outcome, "call_id": wait.call_id, "tool": wait.call.tool,
                    "remember": given.remember, "by": given.user_id}  # fmt: skip
            await tx.add_step(run, "confirmation", given.event_id, note)
            if given.remember != "once" and run.user_id is not None:
                conversation = run.conversation_id if given.remember == "conversation" else None
                decision: PolicyDecision = "allow" if given.approve else "deny"
                client = run.request.client_conversation_id
                await tx.put_policy(run.user_id, conversation, wait.call.tool, decision, client)
            self._observe_step(run, outcome, out)
            await self._unpark(tx, run, outcome, out)
            await out.stage(tx)
        return out.committed()

    async def _supersede(self, tx: RunTransaction, newer: Run, out: Out) -> None:
        """A new message where a run of the conversation waits for a confirmation: the user
        moved on, so that call is not run and the earlier run answers (the new one queues)."""
        waiting = await tx.awaiting_confirmation(newer.conversation_id)
        if waiting is None or waiting.state.awaiting is None:
            return
        wait = waiting.state.awaiting
        note = {"decision": "superseded", "call_id": wait.call_id, "tool": wait.call.tool,
                "by_run": newer.run_id}  # fmt: skip
        await tx.add_step(waiting, "confirmation", newer.run_id, note)
        self._observe_step(waiting, "superseded", out)
        await self._unpark(tx, waiting, "superseded", out)

    async def _unpark(self, tx: RunTransaction, run: Run, outcome: Outcome, out: Out) -> None:
        """Ask for the next approval or send the calls (approved); a denial (or expiry) is
        observed, and with nothing left to send the run answers."""
        step = resume(run, outcome, self._now())
        replies: list[Event] = [step] if step is not None else []
        following = next_for_calls(run, self._settings)
        if step is not None and not run.state.pending_calls:
            following = GENERATE  # a declined call ends the tool loop: say so in the answer
        await self._apply(tx, run, Decision(following, replies), out)

    async def sweep(self) -> list[Outgoing]:
        """Retry steps whose backoff ended, and treat passed deadlines as transient failures."""
        now = self._now()
        if not await self._repo.any_due(now):  # idle: one query a second, no transaction
            return []
        out = Out()
        async with self._repo.transaction() as tx:
            for run in await tx.due(now):
                if run.step == CONFIRM and run.deadline is not None and run.deadline <= now:
                    wait = run.state.awaiting
                    note = {"decision": "expired", "tool": wait.call.tool if wait else None,
                            "call_id": run.pending_event_id}  # fmt: skip
                    await tx.add_step(run, "confirmation", run.pending_event_id or "", note)
                    self._observe_step(run, "expired", out)
                    await self._unpark(tx, run, "expired", out)
                elif run.step == CONFIRM:
                    continue
                elif run.retry_at is not None and run.retry_at <= now:
                    await self._send(tx, run, run.step or FIRST_STEP, run.attempt + 1, out)
                elif run.step is not None and out_of_time(run, run.step, self._settings, now):
                    await self._apply(tx, run, stop_for_time(run, self._settings), out)
                elif run.deadline is not None and run.deadline < self._started_at:
                    await self._resend(tx, run, out)
                elif run.deadline is not None and run.deadline <= now:
                    await tx.add_step(
                        run, "timeout", run.pending_event_id or "", {"deadline": str(run.deadline)}
                    )
                    self._observe_step(run, "timeout", out)
                    await self._failed(tx, run, f"no answer to {run.step} in time", True, out)
            await out.stage(tx)
        return out.committed()
