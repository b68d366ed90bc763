"""Thin handlers: a typed command in, the service called, a typed result out.

Handlers return their result instead of publishing it, so the caller publishes only after the
work succeeded. A storage or model failure becomes a transient `StepFailed`: the harness owns
retries (every write is idempotent per run, so a retried turn is not remembered twice).
"""

from __future__ import annotations

import structlog

from weir_common.events import (
    ConversationTitled,
    MemoryContextReady,
    MemoryContextRequested,
    StepFailed,
    TurnCompleted,
    TurnRecorded,
)
from weir_common.llm import LLMError

from .repository import StoreError
from .service import MemoryService

log = structlog.get_logger(__name__)
TRANSIENT = (StoreError, LLMError)


async def provide_context(
    cmd: MemoryContextRequested, memory: MemoryService
) -> MemoryContextReady | StepFailed:
    """Answer a `memory.context.requested` with the conversation's context."""
    try:
        context = await memory.build_context(cmd)
    except TRANSIENT as exc:
        return _failed(cmd, cmd.type, exc)
    return MemoryContextReady(request_id=cmd.event_id, context=context, **cmd.envelope())


async def remember_turn(cmd: TurnCompleted, memory: MemoryService) -> TurnRecorded | StepFailed:
    """Store a finished turn and confirm it; a redelivered turn is confirmed, not stored again."""
    if cmd.conversation_id is None:
        return StepFailed(
            request_id=cmd.event_id,
            step=cmd.type,
            reason="turn.completed without conversation_id",
            transient=False,
            **cmd.envelope(),
        )
    try:
        await memory.record_turn(cmd, cmd.conversation_id)
    except TRANSIENT as exc:
        return _failed(cmd, cmd.type, exc)
    return TurnRecorded(request_id=cmd.event_id, **cmd.envelope())


async def title_conversation(
    cmd: TurnCompleted, memory: MemoryService
) -> ConversationTitled | None:
    """The conversation's automatic title when this turn gave it one. Best effort after the
    turn is recorded: a failure leaves the conversation untitled until its next turn."""
    if cmd.conversation_id is None:
        return None
    try:
        return await memory.title(cmd, cmd.conversation_id)
    except TRANSIENT as exc:
        log.warning("memory.title_failed", run_id=cmd.run_id, error=str(exc))
        return None


def _failed(
    cmd: MemoryContextRequested | TurnCompleted, step: str, exc: StoreError | LLMError
) -> StepFailed:
    log.warning("memory.store_failed", step=step, run_id=cmd.run_id, error=str(exc))
    return StepFailed(
        request_id=cmd.event_id, step=step, reason=str(exc), transient=True, **cmd.envelope()
    )
