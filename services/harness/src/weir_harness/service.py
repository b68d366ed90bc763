"""The run state machine. It decides; the handlers publish what it returns.

Every transition happens in one PostgreSQL transaction: the result is deduped by its event
id, snapshotted, and the next command recorded as pending, before anything is published. A
command that is lost (the harness or a worker crashed) is sent again when its deadline
passes, so the harness is the only place where retries happen.
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
    MemoryContextReady,
    RouteDecided,
    RunCompleted,
    RunFailed,
    StepFailed,
)
from weir_harness.models import Run, RunStatus
from weir_harness.repository import RunRepository, RunTx
from weir_harness.settings import HarnessSettings
from weir_harness.steps import FIRST_STEP, NEXT_STEP, build_command

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Outgoing:
    """An event to publish once the transaction that produced it has committed."""

    event: Event
    topic: str | None = None  # None: the event type's own topic
    traceparent: str | None = None


@dataclass
class _Out:
    items: list[Outgoing] = field(default_factory=list)

    def add(self, event: Event, topic: str | None = None, run: Run | None = None) -> None:
        self.items.append(Outgoing(event, topic, run.traceparent if run else None))


class RunService:
    """Drives runs from `chat.requested` to `run.completed` or `run.failed`."""

    def __init__(
        self, repo: RunRepository, settings: HarnessSettings, clock: Clock | None = None
    ) -> None:
        self._repo = repo
        self._settings = settings
        self._now = clock or (lambda: datetime.now(UTC))

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
            if not await tx.has_active(run.conversation_id, other_than=run.run_id):
                await self._start(tx, run, out)
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
            if isinstance(result, StepFailed):
                await self._failed(tx, run, result.reason, result.transient, out)
            else:
                _absorb(run, result)
                await self._advance(tx, run, result.type, out)
        return out.items

    async def resume(self) -> int:
        """After a restart: make every unfinished run's pending command due now."""
        async with self._repo.transaction() as tx:
            return await tx.expire_deadlines(self._now())

    async def sweep(self) -> list[Outgoing]:
        """Retry steps whose backoff ended, and treat passed deadlines as transient failures."""
        out = _Out()
        now = self._now()
        async with self._repo.transaction() as tx:
            for run in await tx.due(now):
                if run.retry_at is not None and run.retry_at <= now:
                    await self._send(tx, run, run.step or FIRST_STEP, run.attempt + 1, out)
                elif run.deadline is not None and run.deadline <= now:
                    await tx.add_step(
                        run, "timeout", run.pending_event_id or "", {"deadline": str(run.deadline)}
                    )
                    await self._failed(tx, run, f"no answer to {run.step} in time", True, out)
        return out.items

    async def _start(self, tx: RunTx, run: Run, out: _Out) -> None:
        run.status = RunStatus.RUNNING
        await self._send(tx, run, FIRST_STEP, 1, out)

    async def _send(self, tx: RunTx, run: Run, step: str, attempt: int, out: _Out) -> None:
        command = build_command(
            run,
            step,
            attempt,
            rag=self._settings.rag_connected,
            tools=self._settings.tools_connected,
        )
        run.step, run.attempt, run.pending_event_id = step, attempt, command.event_id
        run.retry_at = None
        run.deadline = self._now() + timedelta(seconds=self._settings.timeout_for(step))
        await tx.add_step(run, "command", command.event_id, command.model_dump(mode="json"))
        await tx.save(run)
        out.add(command, run=run)

    async def _advance(self, tx: RunTx, run: Run, result_type: str, out: _Out) -> None:
        if result_type == "answer.generated":
            out.add(_completed(run), topic=run.request.reply_to, run=run)
            run.status = RunStatus.FINISHING
        following = NEXT_STEP[result_type]
        if following is not None:
            await self._send(tx, run, following, 1, out)
            return
        await self._close(tx, run, RunStatus.COMPLETED, out)

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
        log.info("run.closed", run_id=run.run_id, status=status.value)
        await tx.lock_conversation(run.conversation_id)
        queued = await tx.next_queued(run.conversation_id)
        if queued is not None:
            await self._start(tx, queued, out)


def _absorb(run: Run, result: HarnessResult) -> None:
    """Fold a step's result into the run's state."""
    state = run.state
    if isinstance(result, MemoryContextReady):
        state.context = result.context
    elif isinstance(result, RouteDecided):
        state.intent, state.route, state.rule = result.intent, result.route, result.rule
    elif isinstance(result, AnswerGenerated):
        state.answer, state.model, state.offline = result.text, result.model, result.offline
        state.prompt_tokens, state.completion_tokens = (
            result.prompt_tokens,
            result.completion_tokens,
        )


def _completed(run: Run) -> RunCompleted:
    state = run.state
    return RunCompleted(
        text=state.answer or "",
        intent=state.intent.value if state.intent else None,
        route=state.route.value if state.route else None,
        offline=state.offline,
        **run.request.envelope(),
    )
