"""Thin handlers: ingestion requests and retrieval steps in, outcomes out."""

from __future__ import annotations

import structlog
from faststream.kafka import KafkaBroker

from weir_common.bus import publish
from weir_common.events import IngestRequested, RagRetrieveRequested, StepFailed
from weir_common.topics import Topics
from weir_rag.service import Knowledge

log = structlog.get_logger(__name__)


class RagHandlers:
    """Subscriber callbacks of the knowledge service."""

    def __init__(self, knowledge: Knowledge, broker: KafkaBroker, topics: Topics) -> None:
        self._knowledge, self._broker, self._topics = knowledge, broker, topics

    async def on_ingest(self, request: IngestRequested) -> None:
        """Ingest, then announce the outcome (and tell the requester, if it asked)."""
        outcome = await self._knowledge.ingest(request)
        await publish(self._broker, self._topics, outcome)
        if request.reply_to:
            await publish(self._broker, self._topics, outcome, topic=request.reply_to)

    async def on_retrieve(self, cmd: RagRetrieveRequested) -> None:
        """Retrieve passages for the harness; an engine failure is a transient step failure."""
        try:
            result = await self._knowledge.retrieve(cmd)
        except Exception as exc:  # the harness decides whether to try again
            log.exception("retrieve.failed", run_id=cmd.run_id)
            failed = StepFailed(
                request_id=cmd.event_id,
                step=cmd.type,
                reason=f"retrieval failed: {type(exc).__name__}: {exc}",
                transient=True,
                **cmd.envelope(),
            )
            await publish(self._broker, self._topics, failed)
            return
        await publish(self._broker, self._topics, result)
