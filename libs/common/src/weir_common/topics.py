"""Topic names: one topic per event type, under a configurable prefix.

Replies (`answer.delta`, `run.completed`, `run.failed`) do not have a topic of their own:
they go to the `reply_to` topic the request named, which each gateway instance owns.
"""

from __future__ import annotations

from dataclasses import dataclass

DLQ_SUFFIX = ".dlq"

HARNESS_RESULT_TYPES = (
    "memory.context.ready",
    "route.decided",
    "rag.retrieve.completed",
    "tools.call.completed",
    "react.step.decided",
    "answer.generated",
    "answer.evaluated",
    "turn.recorded",
    "step.failed",
)
COMMAND_TYPES = (
    "chat.requested",
    "tool.confirmation.given",
    "memory.context.requested",
    "route.requested",
    "rag.retrieve.requested",
    "tools.call.requested",
    "react.step.requested",
    "answer.generate.requested",
    "answer.evaluate.requested",
    "turn.completed",
    "ingest.requested",
)
FACT_TYPES = (
    "ingest.completed",
    "ingest.failed",
    "tools.catalog.updated",
)


@dataclass(frozen=True, slots=True)
class Topics:
    """Builds topic names for one deployment (the prefix keeps deployments and tests apart)."""

    prefix: str = "weir."

    def of(self, event_type: str) -> str:
        """The topic carrying events of `event_type`."""
        return f"{self.prefix}{event_type}"

    def reply(self, owner: str) -> str:
        """The reply topic owned by one requester (a gateway instance, a batch job...)."""
        return f"{self.prefix}replies.{owner}"

    @staticmethod
    def dead_letter(topic: str) -> str:
        """The dead-letter topic of `topic`."""
        return f"{topic}{DLQ_SUFFIX}"

    def harness_results(self) -> list[str]:
        """Every topic whose events answer a harness command."""
        return [self.of(t) for t in HARNESS_RESULT_TYPES]

    def all_fixed(self) -> list[str]:
        """Every topic of the catalogue except reply topics, with their dead-letter topics."""
        names = [self.of(t) for t in (*COMMAND_TYPES, *HARNESS_RESULT_TYPES, *FACT_TYPES)]
        return [*names, *(self.dead_letter(n) for n in names)]
