"""How a run moves inside one transaction: send its next command (deadline, budget trim,
model-turn count), apply a decision (notes, replies, park for a confirmation, close), fail a
step (retry after a backoff, or fail the run), close it (diagnosis, verdict, start the next
queued run of its conversation). The events decided are collected in `Outgoing` items and
staged to the transaction's outbox; `weir_harness.service` calls these on every event.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial

import structlog

from weir_common.events import (
    HINT_FIELDS,
    Event,
    HarnessResult,
    PassageVector,
    RouteDecided,
    RunFailed,
    StepCommand,
    TurnCompleted,
)
from weir_common.metrics import RUNS, STEP_SECONDS
from weir_harness.budget import fit, size_of
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import CONFIRM, park
from weir_harness.diagnosis import diagnose
from weir_harness.models import Run, RunStatus
from weir_harness.repository.store import RunTransaction
from weir_harness.settings import HarnessSettings
from weir_harness.steps import (
    EVALUATE,
    FIRST_STEP,
    GENERATE,
    LOOP_STEPS,
    PLAN,
    ROUTE,
    build_command,
)
from weir_harness.transitions import (
    Decision,
    counts_as_model_turn,
    out_of_time,
    pass_unjudged,
    stop_for_time,
    take_route,
)
from weir_harness.verdict import judge

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]
#: Message vectors kept for the turn commands to come (~2 KB each; the oldest go first).
MAX_HINTS = 4096


def record_of(event: Event) -> dict[str, object]:
    """What the run record keeps of an event: all of it but the hints for other services."""
    return event.model_dump(mode="json", exclude=set(HINT_FIELDS))


@dataclass(frozen=True, slots=True)
class Outgoing:
    """An event decided by a transaction, written to its outbox (published after commit)."""

    event: Event
    topic: str | None = None  # None: the event type's own topic
    traceparent: str | None = None
    outbox_id: int | None = None  # its outbox row, once the transaction wrote it


@dataclass
class Out:
    """What a transaction decided: the events, and the metrics to count once it committed
    (a decision made again on a locked run must not count twice)."""

    items: list[Outgoing] = field(default_factory=list)
    counts: list[Callable[[], None]] = field(default_factory=list)
    _staged_in: RunTransaction | None = None

    def add(self, event: Event, topic: str | None = None, run: Run | None = None) -> None:
        self.items.append(Outgoing(event, topic, run.traceparent if run else None))

    async def stage(self, tx: RunTransaction) -> None:
        """Write the decided events to the outbox of the transaction."""
        for item in self.items:
            await tx.enqueue(item.event, item.topic, item.traceparent)
        self._staged_in = tx

    def committed(self) -> list[Outgoing]:
        """The staged events with their outbox ids (after the transaction committed), for
        the relay to publish at once (`OutboxRelay.hand`)."""
        for count in self.counts:
            count()
        self.counts.clear()
        if self._staged_in is None:
            return []
        ids = self._staged_in.outbox_ids
        if len(ids) != len(self.items):
            raise RuntimeError(f"{len(self.items)} events staged, {len(ids)} outbox rows written")
        return [replace(item, outbox_id=i) for item, i in zip(self.items, ids, strict=True)]


class RunDriver:
    """The transitions of one run inside a transaction (the base of `RunService`)."""

    def __init__(
        self,
        settings: HarnessSettings,
        clock: Clock | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self._settings = settings
        self._now = clock or (lambda: datetime.now(UTC))
        self.capabilities = capabilities or Capabilities(rag=settings.rag_connected)
        # the router's embedding of a run's message, handed to memory with its turn: kept in
        # this process only (the harness that routed a run completes it; after a restart or
        # a rebalance, memory embeds the message itself)
        self._message_vectors: OrderedDict[str, PassageVector] = OrderedDict()

    def _keep_hint(self, run: Run, result: HarnessResult) -> None:
        """Keep the message vector a route result brought, for the run's turn command."""
        if isinstance(result, RouteDecided) and result.message_vector is not None:
            self._message_vectors[run.run_id] = result.message_vector
            while len(self._message_vectors) > MAX_HINTS:
                self._message_vectors.popitem(last=False)

    def _with_hint(self, command: StepCommand, run: Run) -> StepCommand:
        """The turn command with the run's message vector, when kept and within the size."""
        if not isinstance(command, TurnCompleted):
            return command
        vector = self._message_vectors.pop(run.run_id, None)
        if (
            vector is None
            or size_of(command) + len(vector.data) + 512 > self._settings.max_message_bytes
        ):
            return command
        return command.model_copy(update={"message_vector": vector})

    def _observe_step(self, run: Run, outcome: str, out: Out) -> None:
        sent = run.state.step_sent_at
        if sent is not None and run.step is not None:
            elapsed = max((self._now() - sent).total_seconds(), 0.0)
            out.counts.append(partial(STEP_SECONDS.labels(run.step, outcome).observe, elapsed))

    async def _resend(self, tx: RunTransaction, run: Run, out: Out) -> None:
        """Send the pending command again, same attempt: it went unanswered while no harness
        ran, which is no failure of the step."""
        note = {"deadline": str(run.deadline), "why": "the harness was down"}
        await tx.add_step(run, "resend", run.pending_event_id or "", note)
        await self._send(tx, run, run.step or FIRST_STEP, run.attempt, out, again=True)

    async def _start(self, tx: RunTransaction, run: Run, out: Out) -> None:
        run.status = RunStatus.RUNNING
        await self._send(tx, run, FIRST_STEP, 1, out)

    async def _send(
        self,
        tx: RunTransaction,
        run: Run,
        step: str,
        attempt: int,
        out: Out,
        *,
        again: bool = False,
    ) -> None:
        now = self._now()
        if out_of_time(run, step, self._settings, now):
            await self._apply(tx, run, stop_for_time(run, self._settings), out)
            return
        state = run.state
        if step == ROUTE and attempt == 1 and state.route_sent is not None:
            await self._await_route(tx, run, now)
            return
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
        command = self._with_hint(command, run)
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
        await tx.add_step(run, "command", command.event_id, record_of(command))
        out.add(command, run=run)
        if step == FIRST_STEP and self._settings.route_with_memory:
            await self._send_route_alongside(tx, run, out)
        await tx.save(run)

    async def _send_route_alongside(self, tx: RunTransaction, run: Run, out: Out) -> None:
        """Ask for the route with the memory context, unless it is known or on its way (a
        retried memory step); the memory step stays the pending one."""
        state = run.state
        if state.route is not None or state.route_sent is not None:
            return
        caps = self.capabilities.for_request(run.request)
        route = build_command(run, ROUTE, 1, caps, self._settings)
        state.route_sent = route.event_id
        await tx.add_step(run, "command", route.event_id, record_of(route), ROUTE)
        out.add(route, run=run)

    async def _await_route(self, tx: RunTransaction, run: Run, now: datetime) -> None:
        """Memory answered before the route: the route command sent alongside becomes the
        pending one (it is on its way, so it is not sent again) with a deadline of its own."""
        state = run.state
        run.step, run.attempt, run.pending_event_id = ROUTE, 1, state.route_sent
        state.route_sent, state.step_sent_at, run.retry_at = None, now, None
        run.deadline = now + timedelta(seconds=self._settings.timeout_for(ROUTE))
        await tx.save(run)

    async def _early_route(self, tx: RunTransaction, run: Run, result: HarnessResult) -> None:
        """The route answered while the memory step is pending: keep the decision for when
        memory answers. A failure is kept in the log only: the route is asked again then."""
        await tx.add_step(run, "result", result.event_id, record_of(result), ROUTE)
        state = run.state
        state.route_sent = None
        if isinstance(result, RouteDecided):
            take_route(run, result)
        await tx.save(run)

    async def _apply(self, tx: RunTransaction, run: Run, decision: Decision, out: Out) -> None:
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

    async def _failed(
        self, tx: RunTransaction, run: Run, reason: str, transient: bool, out: Out
    ) -> None:
        if transient and run.attempt < self._settings.max_attempts:
            delay = self._settings.backoff_base_s * 2 ** (run.attempt - 1)
            run.retry_at = self._now() + timedelta(seconds=delay)
            run.deadline = None
            run.error = reason
            await tx.save(run)
            log.info("step.retry_scheduled", run_id=run.run_id, step=run.step, delay_s=delay)
            return
        if run.step == EVALUATE and run.state.candidate is not None:
            why = f"the judge failed after {run.attempt} attempt(s): {reason}"
            await self._apply(tx, run, pass_unjudged(run, why), out)
            return
        run.error = f"{run.step} failed after {run.attempt} attempt(s): {reason}"
        if run.status is RunStatus.RUNNING:
            out.add(
                RunFailed(code="step_failed", reason=run.error, **run.request.envelope()),
                topic=run.request.reply_to,
                run=run,
            )
        await self._close(tx, run, RunStatus.FAILED, out)

    async def _close(self, tx: RunTransaction, run: Run, status: RunStatus, out: Out) -> None:
        run.status, run.pending_event_id, run.deadline, run.retry_at = status, None, None, None
        run.state.route_sent = None  # a route still out is answered to a closed run: stale
        await tx.save(run)
        out.counts.append(RUNS.labels(status.value).inc)
        steps = await tx.step_log(run.run_id)
        await tx.end(run.run_id, diagnose(run, steps), judge(run, steps))
        log.info("run.closed", run_id=run.run_id, status=status.value)
        await tx.lock_conversation(run.conversation_id)
        queued = await tx.next_queued(run.conversation_id)
        if queued is not None:
            await self._start(tx, queued, out)
