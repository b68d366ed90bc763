"""Thin handlers: a typed command in, the service called, a typed result out.

Handlers return their result instead of publishing it, so the caller publishes only after the
work succeeded. A storage failure becomes a transient `StepFailed`: the harness owns retries.
"""

from __future__ import annotations

import structlog

from weir_common.events import (
    MemoryContext,
    MemoryContextReady,
    MemoryContextRequested,
    StepFailed,
    Turn,
    TurnCompleted,
    TurnRecorded,
)

from . import service
from .repository import ShortTermStore, StoreError

log = structlog.get_logger(__name__)


async def provide_context(
    cmd: MemoryContextRequested, store: ShortTermStore
) -> MemoryContextReady | StepFailed:
    """Answer a `memory.context.requested` with the conversation's context."""
    if cmd.conversation_id is None:
        # no conversation, no history: an empty context is the honest answer
        context = MemoryContext()
    else:
        try:
            context = await service.build_context(store, cmd.conversation_id, cmd.query)
        except StoreError as exc:
            return _failed(cmd, cmd.type, exc)
    return MemoryContextReady(request_id=cmd.event_id, context=context, **cmd.envelope())


async def remember_turn(cmd: TurnCompleted, store: ShortTermStore) -> TurnRecorded | StepFailed:
    """Store a finished turn and confirm it; a redelivered turn is confirmed, not stored again."""
    if cmd.conversation_id is None:
        return StepFailed(
            request_id=cmd.event_id,
            step=cmd.type,
            reason="turn.completed without conversation_id",
            transient=False,
            **cmd.envelope(),
        )
    # without a run id, the command's own id still makes redeliveries of it idempotent
    turn = Turn(run_id=cmd.run_id or cmd.event_id, user=cmd.user_text, assistant=cmd.assistant_text)
    try:
        await service.record_turn(store, cmd.conversation_id, turn)
    except StoreError as exc:
        return _failed(cmd, cmd.type, exc)
    return TurnRecorded(request_id=cmd.event_id, **cmd.envelope())


def _failed(cmd: MemoryContextRequested | TurnCompleted, step: str, exc: StoreError) -> StepFailed:
    log.warning("memory.store_failed", step=step, run_id=cmd.run_id, error=str(exc))
    return StepFailed(
        request_id=cmd.event_id, step=step, reason=str(exc), transient=True, **cmd.envelope()
    )
