"""Thin handlers: a typed command in, the service called, a typed result out.

The handler shape of every service: a `MemoryHandlers` class whose `on_<event>` methods
`app.py` subscribes; each decodes (its argument is the typed event), calls the service and
emits, and publishes its result only after the work succeeded. A storage or model failure
becomes a transient `StepFailed`: the harness owns retries (every write is idempotent per
run, so a retried turn is not remembered twice).
"""

from __future__ import annotations

import structlog
from faststream.kafka import KafkaBroker

from weir_common.bus import publish
from weir_common.events import (
    ConversationTitled,
    Event,
    MemoryContextReady,
    MemoryContextRequested,
    StepFailed,
    TurnCompleted,
    TurnRecorded,
)
from weir_common.llm import LLMError
from weir_common.topics import Topics

from .repository import StoreError
from .service import MemoryService

log = structlog.get_logger(__name__)
TRANSIENT = (StoreError, LLMError)


class MemoryHandlers:
    """Subscriber callbacks of the memory service."""

    def __init__(self, memory: MemoryService, broker: KafkaBroker, topics: Topics) -> None:
        self._memory, self._broker, self._topics = memory, broker, topics

    async def on_context_requested(self, cmd: MemoryContextRequested) -> None:
        """Answer a `memory.context.requested` with the conversation's context."""
        try:
            context = await self._memory.build_context(cmd)
        except TRANSIENT as exc:
            await self._emit(_failed(cmd, cmd.type, exc))
            return
        await self._emit(
            MemoryContextReady(request_id=cmd.event_id, context=context, **cmd.envelope())
        )

    async def on_turn_completed(self, cmd: TurnCompleted) -> None:
        """Store a finished turn and confirm it (a redelivered turn is confirmed, not stored
        again); then the conversation's automatic title, when this turn gave it one."""
        if cmd.conversation_id is None:
            await self._emit(StepFailed(request_id=cmd.event_id, step=cmd.type,
                                        reason="turn.completed without conversation_id",
                                        transient=False, **cmd.envelope()))  # fmt: skip
            return
        try:
            await self._memory.record_turn(cmd, cmd.conversation_id)
        except TRANSIENT as exc:
            await self._emit(_failed(cmd, cmd.type, exc))
            return
        await self._emit(TurnRecorded(request_id=cmd.event_id, **cmd.envelope()))
        titled = await self._title(cmd, cmd.conversation_id)  # no delay: the run may complete
        if titled is not None and cmd.reply_to:
            await publish(self._broker, self._topics, titled, topic=cmd.reply_to)

    async def _title(self, cmd: TurnCompleted, conversation_id: str) -> ConversationTitled | None:
        """Best effort after the turn is recorded: a failure leaves the conversation
        untitled until its next turn."""
        try:
            return await self._memory.title(cmd, conversation_id)
        except TRANSIENT as exc:
            log.warning("memory.title_failed", run_id=cmd.run_id, error=str(exc))
            return None

    async def _emit(self, event: Event) -> None:
        await publish(self._broker, self._topics, event)


def _failed(
    cmd: MemoryContextRequested | TurnCompleted, step: str, exc: StoreError | LLMError
) -> StepFailed:
    log.warning("memory.store_failed", step=step, run_id=cmd.run_id, error=str(exc))
    return StepFailed(
        request_id=cmd.event_id, step=step, reason=str(exc), transient=True, **cmd.envelope()
    )
