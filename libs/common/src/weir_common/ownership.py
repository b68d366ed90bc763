"""Who may publish what: the topics each service owns, as data in one place.

On a broker with SASL every service is its own principal (`User:<service>`), and the ACLs
made from this map (`weir_deploy.kafka_acls`) let it produce only the topics it owns, read
only the topics it consumes, and join only its own consumer groups. A principal that is not
the gateway cannot publish `chat.requested`, so nobody reaching the broker can ask for a
turn on someone else's behalf.

Event types are the catalogue's (`weir_common.topics`); reply topics
(`<prefix>replies.<owner>`) are matched by the owner part, and a consumer may write the
dead-letter topics (`<topic>.dlq`) of what it consumes: it parks poison events there.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir_common.topics import HARNESS_RESULT_TYPES


@dataclass(frozen=True, slots=True)
class Ownership:
    """What one service's principal does on the broker."""

    service: str
    produces: tuple[str, ...] = ()
    """Event types it publishes on their own topics."""
    consumes: tuple[str, ...] = ()
    """Event types it subscribes to (it also parks their poison events in `.dlq`)."""
    replies: tuple[str, ...] = ()
    """Event types it publishes as replies, to the `reply_to` topic a request named (any
    requester's)."""
    reads_replies: str | None = None
    """The owner part of the reply topics it reads (`gateway.` for `replies.gateway.*`)."""
    groups: tuple[str, ...] = ()
    """Prefixes of its consumer group ids, with the topic prefix left out (`harness.`)."""

    @property
    def writes_replies(self) -> bool:
        """It publishes to reply topics."""
        return bool(self.replies)


WORKER_FAILURE = "step.failed"

OWNERSHIP: tuple[Ownership, ...] = (
    Ownership(
        "gateway",
        produces=("chat.requested", "ingest.requested", "tool.confirmation.given"),
        reads_replies="gateway.",
        groups=("gateway.",),
    ),
    Ownership(
        "harness",
        produces=(
            "memory.context.requested",
            "route.requested",
            "rag.retrieve.requested",
            "tools.call.requested",
            "react.step.requested",
            "answer.generate.requested",
            "answer.evaluate.requested",
            "turn.completed",
        ),
        consumes=(
            "chat.requested",
            "tool.confirmation.given",
            *HARNESS_RESULT_TYPES,
            "tools.catalog.updated",
        ),
        replies=("run.step", "run.completed", "run.failed", "tool.confirmation.requested"),
        groups=("harness.",),
    ),
    Ownership(
        "router",
        produces=(
            "route.decided",
            "react.step.decided",
            "answer.generated",
            "answer.evaluated",
            WORKER_FAILURE,
        ),
        consumes=(
            "route.requested",
            "react.step.requested",
            "answer.generate.requested",
            "answer.evaluate.requested",
            "tools.catalog.updated",
        ),
        replies=("answer.delta",),  # streamed while the answer is generated
        groups=("router.",),
    ),
    Ownership(
        "memory",
        produces=("memory.context.ready", "turn.recorded", WORKER_FAILURE),
        consumes=("memory.context.requested", "turn.completed"),
        replies=("conversation.titled",),
        groups=("memory.",),
    ),
    Ownership(
        "rag",
        produces=("rag.retrieve.completed", "ingest.completed", "ingest.failed", WORKER_FAILURE),
        consumes=("ingest.requested", "rag.retrieve.requested"),
        replies=("ingest.completed", "ingest.failed"),  # as well as on their own topics
        groups=("rag.",),
    ),
    Ownership(
        "tools",
        produces=("tools.call.completed", "tools.catalog.updated", WORKER_FAILURE),
        consumes=("tools.call.requested",),
        groups=("tools.",),
    ),
    # the batch ingest job of weir_rag (`python -m weir_rag.batch`), run by an operator
    Ownership(
        "batch",
        produces=("ingest.requested",),
        reads_replies="batch.",
        groups=("batch.",),
    ),
)

SERVICE_PRINCIPALS = tuple(o.service for o in OWNERSHIP if o.service != "batch")
"""The principals of the six long-running services (each has a SCRAM user in a deployment)."""


OWN_TOPIC_TYPES = frozenset(t for o in OWNERSHIP for t in o.produces)
"""Every event type some principal publishes on its own topic (`<prefix><type>`)."""
REPLY_TYPES = frozenset(t for o in OWNERSHIP for t in o.replies)
"""Every event type some service publishes to a requester's `reply_to` topic."""


def ownership_of(service: str) -> Ownership:
    """The entry of `service` in the map."""
    for entry in OWNERSHIP:
        if entry.service == service:
            return entry
    raise KeyError(service)
