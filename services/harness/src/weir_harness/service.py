"""The run state machine. It decides; the outbox relay publishes what it decided.

Every transition happens in one PostgreSQL transaction: the result is deduped by its event
id, snapshotted, the next command recorded as pending, and every command and reply written
to the outbox, all committed together; the relay (`weir_harness.outbox`) publishes them
afterwards, so nothing decided is lost to a crash between commit and publish. A command
that is lost on its way (a worker crashed) is sent again when its deadline passes, so the
harness is the only place where retries happen.

A restart touches only what is late: nothing is re-sent when the harness starts. A command
whose deadline passed while no harness was running (before this process started) is
re-sent once with the same attempt number, since its silence says nothing about the step;
a deadline that passes while this process runs is a failed attempt as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog

from weir_common.events import (
    AnswerGenerated,
    ChatRequested,
    Event,
    HarnessResult,
    ReactStepDecided,
    RunFailed,
    StepFailed,
    ToolConfirmationGiven,
)
from weir_common.metrics import RUNS, STEP_SECONDS
from weir_harness.budget import fit, size_of
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import (
    CONFIRM,
    NO_POLICIES,
    Outcome,
    PolicyDecision,
    answerable,
    park,
    resume,
)
from weir_harness.diagnosis import diagnose, judge
from weir_harness.dispatch import next_for_calls
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository, RunTx
from weir_harness.settings import HarnessSettings
from weir_harness.steps import FIRST_STEP, GENERATE, LOOP_STEPS, PLAN, build_command
from weir_harness.transitions import (
    Decision,
    counts_as_model_turn,
    decide,
    out_of_time,
    stop_for_time,
)

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Outgoing:
    """An event decided by a transaction, written to its outbox (published after commit)."""

    event: Event
    topic: str | None = None  # None: the event type's own topic
    traceparent: str | None = None


@dataclass
class _Out:
    items: list[Outgoing] = field(default_factory=list)

    def add(self, event: Event, topic: str | None = None, run: Run | None = None) -> None:
        self.items.append(Outgoing(event, topic, run.traceparent if run else None))

    async def stage(self, tx: RunTx) -> None:
        """Write the decided events to the outbox of the transaction."""
        for item in self.items:
            await tx.enqueue(item.event, item.topic, item.traceparent)


class RunService:
    """Drives runs from `chat.requested` to `run.completed` or `run.failed`."""

    def __init__(
        self,
        repo: RunRepository,
        settings: HarnessSettings,
        clock: Clock | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self._repo = repo
        self._settings = settings
        self._now = clock or (lambda: datetime.now(UTC))
        self.capabilities = capabilities or Capabilities(rag=settings.rag_connected)
        self._started_at = self._now()

    async def on_chat(self, event: ChatRequested, traceparent: str | None) -> list[Outgoing]:
        """Open a run for the request; start it unless its conversation is busy."""
        out = _Out()
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
            await tx.add_step(
                run, "request", event.event_id, event.model_dump(mode="json"), "chat.requested"
            )
            await tx.lock_conversation(run.conversation_id)
            await self._supersede(tx, run, out)
            if not await tx.has_active(run.conversation_id, other_than=run.run_id):
                await self._start(tx, run, out)
            await out.stage(tx)
        return out.items

    async def on_result(self, result: HarnessResult) -> list[Outgoing]:
        """Snapshot a worker's result and send the next command."""
        out = _Out()
        async with self._repo.transaction() as tx:
            if not await tx.first_time(result.event_id) or result.run_id is None:
                return []
            run = await tx.get(result.run_id)
            if run is None or run.pending_event_id != result.request_id:
                log.info("result.stale", run_id=result.run_id, type=result.type)
                return []
            await tx.add_step(run, "result", result.event_id, result.model_dump(mode="json"))
            self._observe_step(run, "failed" if isinstance(result, StepFailed) else "ok")
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
        return out.items

    async def on_confirmation(self, given: ToolConfirmationGiven) -> list[Outgoing]:
        """The user's answer for a parked call: send it, or end it as declined."""
        out = _Out()
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
            self._observe_step(run, outcome)
            await self._unpark(tx, run, outcome, out)
            await out.stage(tx)
        return out.items

    async def _supersede(self, tx: RunTx, newer: Run, out: _Out) -> None:
        """A new message where a run of the conversation waits for a confirmation: the user
        moved on, so that call is not run and the earlier run answers (the new one queues)."""
        waiting = await tx.awaiting_confirmation(newer.conversation_id)
        if waiting is None or waiting.state.awaiting is None:
            return
        wait = waiting.state.awaiting
        note = {"decision": "superseded", "call_id": wait.call_id, "tool": wait.call.tool,
                "by_run": newer.run_id}  # fmt: skip
        await tx.add_step(waiting, "confirmation", newer.run_id, note)
        self._observe_step(waiting, "superseded")
        await self._unpark(tx, waiting, "superseded", out)

    async def _unpark(self, tx: RunTx, run: Run, outcome: Outcome, out: _Out) -> None:
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
        out = _Out()
        now = self._now()
        async with self._repo.transaction() as tx:
            for run in await tx.due(now):
                if run.step == CONFIRM and run.deadline is not None and run.deadline <= now:
                    wait = run.state.awaiting
                    note = {"decision": "expired", "tool": wait.call.tool if wait else None,
                            "call_id": run.pending_event_id}  # fmt: skip
                    await tx.add_step(run, "confirmation", run.pending_event_id or "", note)
                    self._observe_step(run, "expired")
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
                    self._observe_step(run, "timeout")
                    await self._failed(tx, run, f"no answer to {run.step} in time", True, out)
            await out.stage(tx)
        return out.items

    def _observe_step(self, run: Run, outcome: str) -> None:
        sent = run.state.step_sent_at
        if sent is not None and run.step is not None:
            elapsed = (self._now() - sent).total_seconds()
            STEP_SECONDS.labels(run.step, outcome).observe(max(elapsed, 0.0))

    async def _resend(self, tx: RunTx, run: Run, out: _Out) -> None:
        """Send the pending command again, same attempt: it went unanswered while no harness
        ran, which is no failure of the step."""
        note = {"deadline": str(run.deadline), "why": "the harness was down"}
        await tx.add_step(run, "resend", run.pending_event_id or "", note)
        await self._send(tx, run, run.step or FIRST_STEP, run.attempt, out, again=True)

    async def _start(self, tx: RunTx, run: Run, out: _Out) -> None:
        run.status = RunStatus.RUNNING
        await self._send(tx, run, FIRST_STEP, 1, out)

    async def _send(
        self, tx: RunTx, run: Run, step: str, attempt: int, out: _Out, *, again: bool = False
    ) -> None:
        now = self._now()
        if out_of_time(run, step, self._settings, now):
            await self._apply(tx, run, stop_for_time(run, self._settings), out)
            return
        state = run.state
        if step == PLAN and state.loop_started_at is None:
            state.loop_started_at = now
        if attempt == 1 and not again and counts_as_model_turn(step):
            state.model_turns += 1
        if step == GENERATE:
            state.generations += 1  # the deltas' attempt: every generation resets the client
        command = build_command(
            run, step, attempt, self.capabilities.for_request(run.request), self._settings
        )
        command, trimmed = fit(command, self._settings.max_message_bytes)
        run.step, run.attempt, run.pending_event_id = step, attempt, command.event_id
        state.step_sent_at = now
        run.retry_at = None
        run.deadline = now + timedelta(seconds=self._settings.timeout_for(step))
        if step in LOOP_STEPS and state.loop_started_at is not None:
            loop_end = state.loop_started_at + timedelta(
                seconds=self._settings.agent_max_runtime_seconds
            )
            run.deadline = min(run.deadline, loop_end)
        if trimmed:
            note = {"trimmed": trimmed, "bytes": size_of(command)}
            await tx.add_step(run, "budget", command.event_id, note, step)
            log.warning("command.trimmed", run_id=run.run_id, step=step, trimmed=trimmed)
        await tx.add_step(run, "command", command.event_id, command.model_dump(mode="json"))
        await tx.save(run)
        out.add(command, run=run)

    async def _apply(self, tx: RunTx, run: Run, decision: Decision, out: _Out) -> None:
        """Record the decision's notes, send its replies, then its next command (or close)."""
        for kind, payload in decision.notes:
            await tx.add_step(run, kind, "", payload)
        for reply in decision.replies:
            out.add(reply, topic=run.request.reply_to, run=run)
        if decision.next_step is None:
            await self._close(tx, run, RunStatus.COMPLETED, out)
        elif decision.next_step == CONFIRM:
            caps = self.capabilities.for_request(run.request)
            waiting = next(call for call in run.state.pending_calls if call.ask)
            asked = park(run, waiting, caps, self._now(), self._settings)
            note = {"decision": "asked", "call_id": asked.call_id, "tool": asked.tool,
                    "reason": asked.reason, "expires_at": asked.expires_at.isoformat()}  # fmt: skip
            await tx.add_step(run, "confirmation", asked.call_id, note, CONFIRM)
            await tx.save(run)
            out.add(asked, topic=run.request.reply_to, run=run)
        else:
            await self._send(tx, run, decision.next_step, 1, out)

    async def _failed(self, tx: RunTx, run: Run, reason: str, transient: bool, out: _Out) -> None:
        if transient and run.attempt < self._settings.max_attempts:
            delay = self._settings.backoff_base_s * 2 ** (run.attempt - 1)
            run.retry_at = self._now() + timedelta(seconds=delay)
            run.deadline = None
            run.error = reason
            await tx.save(run)
            log.info("step.retry_scheduled", run_id=run.run_id, step=run.step, delay_s=delay)
            return
        run.error = f"{run.step} failed after {run.attempt} attempt(s): {reason}"
        if run.status is RunStatus.RUNNING:
            out.add(
                RunFailed(code="step_failed", reason=run.error, **run.request.envelope()),
                topic=run.request.reply_to,
                run=run,
            )
        await self._close(tx, run, RunStatus.FAILED, out)

    async def _close(self, tx: RunTx, run: Run, status: RunStatus, out: _Out) -> None:
        run.status, run.pending_event_id, run.deadline, run.retry_at = status, None, None, None
        await tx.save(run)
        RUNS.labels(status.value).inc()
        steps = await tx.step_log(run.run_id)
        await tx.end(run.run_id, diagnose(run, steps), judge(run, steps))
        log.info("run.closed", run_id=run.run_id, status=status.value)
        await tx.lock_conversation(run.conversation_id)
        queued = await tx.next_queued(run.conversation_id)
        if queued is not None:
            await self._start(tx, queued, out)
