"""Commands the harness sends for each step of a run, and the workers' results."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from weir_common.events.base import StepCommand, StepResult
from weir_common.events.parts import Observation, Passage, ProposedCall
from weir_common.events.vectors import PassageVector


class Turn(BaseModel):
    """One exchange of a conversation, as short-term memory keeps it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    user: str
    assistant: str
    private: bool = Field(
        default=False, description="A private turn: kept for its conversation, never analysed."
    )


class Intent(StrEnum):
    """The four intent classes of the rule engine (seed 002)."""

    CHAT = "chat"
    KNOWLEDGE = "knowledge"
    EXTERNAL_DATA = "external_data"
    EXTERNAL_ACTION = "external_action"


class Route(StrEnum):
    """How a run answers: the route chosen from the intent."""

    PLAIN_CHAT = "plain_chat"
    RAG = "rag"
    SINGLE_TOOL = "single_tool"
    REACT = "react"


class MemoryContextRequested(StepCommand):
    """Harness → memory: gather what the model should know for this turn."""

    type: Literal["memory.context.requested"] = "memory.context.requested"
    query: str
    private: bool = False


class MemoryContext(BaseModel):
    """What memory hands to the model for one turn."""

    model_config = ConfigDict(frozen=True)

    history: list[Turn] = Field(default_factory=list, description="Recent turns, oldest first.")
    summary: str | None = Field(default=None, description="Summary of turns older than the window.")
    facts: list[str] = Field(
        default_factory=list, description="Long-term memories and preferences."
    )
    preferences: str | None = Field(
        default=None,
        description="The user's preference block (seed 000), in the user's language.",
        examples=["【用户偏好】\n姓名: 小明\n喜好: 打篮球"],
    )
    recall: str | None = Field(
        default=None,
        description="Recalled past sessions (seed 001: history, topic, session, within).",
    )
    prompt: str | None = Field(
        default=None,
        description=(
            "Everything above formatted for a system prompt: preferences, long-term memories,"
            " the current session's summary and recall results (seeds 000, 001)."
        ),
    )


class MemoryContextReady(StepResult):
    """Memory → harness: the context for this turn."""

    type: Literal["memory.context.ready"] = "memory.context.ready"
    context: MemoryContext


class RouteRequested(StepCommand):
    """Harness → router: classify the message and choose a route."""

    type: Literal["route.requested"] = "route.requested"
    query: str


class RouteDecided(StepResult):
    """Router → harness: the intent and the route."""

    type: Literal["route.decided"] = "route.decided"
    intent: Intent
    route: Route
    rule: str | None = Field(default=None, description="The rule that matched, for run records.")
    message_vector: PassageVector | None = Field(
        default=None,
        description="The message's passage embedding, when the router made one: the harness "
        "hands it to memory with the turn (a hint, left out of run records).",
    )


class AnswerGenerateRequested(StepCommand):
    """Harness → router: generate the answer, streaming deltas to `reply_to`."""

    type: Literal["answer.generate.requested"] = "answer.generate.requested"
    query: str
    reply_to: str
    context: MemoryContext = Field(default_factory=MemoryContext)
    intent: Intent = Intent.CHAT
    route: Route = Route.PLAIN_CHAT
    capability_notes: list[str] = Field(
        default_factory=list, description="What is connected and what is not (F03)."
    )
    evidence: list[Passage] = Field(
        default_factory=list, description="Retrieved passages to answer from, with citations."
    )
    observations: list[Observation] = Field(
        default_factory=list, description="What the tools returned in this run."
    )
    tool_calls_left: int = Field(
        default=0,
        ge=0,
        description="How many tool calls the model may still ask for instead of answering "
        "(0: no tools are offered; the offline responder never calls tools).",
    )
    stream_attempt: int = Field(
        default=0,
        ge=0,
        description="The attempt number the deltas carry (0: `attempt`): it grows with every "
        "generation of the run, a retry or an answer after tool calls, so clients reset.",
    )
    revision_note: str | None = Field(
        default=None,
        description="Why the evaluator rejected the previous answer (F39, seed 004); the "
        "model regenerates with it in mind. None on a first generation.",
        examples=["the answer suggests 'coffee', which the user's stored preferences avoid"],
    )


class AnswerGenerated(StepResult):
    """Router → harness: the whole answer, after its deltas were sent."""

    type: Literal["answer.generated"] = "answer.generated"
    text: str
    model: str | None = None
    offline: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[ProposedCall] = Field(
        default_factory=list,
        description="The model asked for these tools instead of answering: the harness runs "
        "them and asks for the answer again.",
    )


class TurnCompleted(StepCommand):
    """Harness → memory: a turn is done; remember it."""

    type: Literal["turn.completed"] = "turn.completed"
    user_text: str
    assistant_text: str
    private: bool = False
    client_conversation_id: str | None = Field(
        default=None, description="The conversation id the client named (see ChatRequested)."
    )
    reply_to: str | None = Field(
        default=None, description="The requester's topic, for events about the conversation."
    )
    sources: list[Passage] = Field(
        default_factory=list, description="The passages the answer was given with."
    )
    observations: list[Observation] = Field(
        default_factory=list, description="The tool calls of the turn and what they returned."
    )
    route: str | None = Field(default=None, description="The route the turn took.")
    message_vector: PassageVector | None = Field(
        default=None,
        description="The user's message embedded as a passage by the router, for memory to "
        "use instead of embedding it again (a hint, left out of run records).",
    )


class TurnRecorded(StepResult):
    """Memory → harness: the turn is stored."""

    type: Literal["turn.recorded"] = "turn.recorded"


class StepFailed(StepResult):
    """Any worker → harness: the step could not be done."""

    type: Literal["step.failed"] = "step.failed"
    step: str = Field(examples=["answer.generate.requested"])
    reason: str
    transient: bool = Field(description="True when the same command may succeed if retried.")
