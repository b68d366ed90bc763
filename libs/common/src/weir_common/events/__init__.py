"""The event catalogue: every event type, one discriminated union, one decoder."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from weir_common.events.base import Event, StepCommand, StepResult, new_id, utcnow
from weir_common.events.chat import (
    AnswerDelta,
    ChatRequested,
    ConversationTitled,
    RunCompleted,
    RunFailed,
)
from weir_common.events.evaluation import AnswerEvaluated, AnswerEvaluateRequested
from weir_common.events.parts import Citation, Observation, Passage, ProposedCall
from weir_common.events.rag import (
    IngestCompleted,
    IngestFailed,
    IngestRequested,
    RagRetrieveCompleted,
    RagRetrieveRequested,
)
from weir_common.events.steps import (
    AnswerGenerated,
    AnswerGenerateRequested,
    Intent,
    MemoryContext,
    MemoryContextReady,
    MemoryContextRequested,
    Route,
    RouteDecided,
    RouteRequested,
    StepFailed,
    Turn,
    TurnCompleted,
    TurnRecorded,
)
from weir_common.events.tools import (
    ConfirmReason,
    ReactStepDecided,
    ReactStepRequested,
    Remember,
    RunStep,
    ServerStatus,
    ToolCallItem,
    ToolCallResult,
    ToolConfirmationGiven,
    ToolConfirmationRequested,
    ToolInfo,
    ToolsCallCompleted,
    ToolsCallRequested,
    ToolsCatalogUpdated,
)
from weir_common.events.vectors import HINT_FIELDS, PassageVector, text_digest

AnyEvent = Annotated[
    ChatRequested
    | AnswerDelta
    | RunCompleted
    | RunFailed
    | MemoryContextRequested
    | MemoryContextReady
    | RouteRequested
    | RouteDecided
    | AnswerGenerateRequested
    | AnswerGenerated
    | AnswerEvaluateRequested
    | AnswerEvaluated
    | TurnCompleted
    | TurnRecorded
    | StepFailed
    | IngestRequested
    | IngestCompleted
    | IngestFailed
    | RagRetrieveRequested
    | RagRetrieveCompleted
    | ToolsCatalogUpdated
    | ToolsCallRequested
    | ToolsCallCompleted
    | ReactStepRequested
    | ReactStepDecided
    | RunStep
    | ToolConfirmationRequested
    | ToolConfirmationGiven
    | ConversationTitled,
    Field(discriminator="type"),
]
"""Any event of the catalogue, told apart by its `type`."""

HarnessResult = Annotated[
    MemoryContextReady
    | RouteDecided
    | RagRetrieveCompleted
    | ToolsCallCompleted
    | ReactStepDecided
    | AnswerGenerated
    | AnswerEvaluated
    | TurnRecorded
    | StepFailed,
    Field(discriminator="type"),
]
"""A worker's result that the harness consumes."""

Reply = Annotated[
    AnswerDelta
    | RunCompleted
    | RunFailed
    | RunStep
    | ToolConfirmationRequested
    | IngestCompleted
    | IngestFailed
    | ConversationTitled,
    Field(discriminator="type"),
]
"""What a requester reads on its `reply_to` topic."""

EVENT_ADAPTER: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)
REPLY_ADAPTER: TypeAdapter[Reply] = TypeAdapter(Reply)


def decode_event(raw: bytes | str) -> AnyEvent:
    """Decode one JSON event of any known type; raises `pydantic.ValidationError` otherwise."""
    return EVENT_ADAPTER.validate_json(raw)


__all__ = [
    "EVENT_ADAPTER",
    "HINT_FIELDS",
    "REPLY_ADAPTER",
    "AnswerDelta",
    "AnswerEvaluateRequested",
    "AnswerEvaluated",
    "AnswerGenerateRequested",
    "AnswerGenerated",
    "AnyEvent",
    "ChatRequested",
    "Citation",
    "ConfirmReason",
    "ConversationTitled",
    "Event",
    "HarnessResult",
    "IngestCompleted",
    "IngestFailed",
    "IngestRequested",
    "Intent",
    "MemoryContext",
    "MemoryContextReady",
    "MemoryContextRequested",
    "Observation",
    "Passage",
    "PassageVector",
    "ProposedCall",
    "RagRetrieveCompleted",
    "RagRetrieveRequested",
    "ReactStepDecided",
    "ReactStepRequested",
    "Remember",
    "Reply",
    "Route",
    "RouteDecided",
    "RouteRequested",
    "RunCompleted",
    "RunFailed",
    "RunStep",
    "ServerStatus",
    "StepCommand",
    "StepFailed",
    "StepResult",
    "ToolCallItem",
    "ToolCallResult",
    "ToolConfirmationGiven",
    "ToolConfirmationRequested",
    "ToolInfo",
    "ToolsCallCompleted",
    "ToolsCallRequested",
    "ToolsCatalogUpdated",
    "Turn",
    "TurnCompleted",
    "TurnRecorded",
    "decode_event",
    "new_id",
    "text_digest",
    "utcnow",
]
