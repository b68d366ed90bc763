"""Events at the edge: a chat message comes in, a run's outcome goes back."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weir_common.events.base import Event


class ChatRequested(Event):
    """A user (or an internal service) asks for one chat turn.

    Keyed by `conversation_id`, so turns of one conversation stay in order. The harness
    answers on `reply_to` with `answer.delta`, `run.completed` or `run.failed`.
    """

    type: Literal["chat.requested"] = "chat.requested"
    text: str = Field(min_length=1, description="The user's message.", examples=["你好"])
    reply_to: str = Field(description="Topic on which the requester reads the answer.")
    private: bool = Field(
        default=False, description="Private mode: nothing goes to long-term memory."
    )
    client_message_id: str | None = Field(
        default=None, description="The client's own id for this message, echoed back."
    )
    use_knowledge: bool = Field(
        default=True, description="The user lets this turn search the knowledge base."
    )
    use_tools: bool = Field(default=True, description="The user lets this turn call tools.")
    client_conversation_id: str | None = Field(
        default=None,
        description="The conversation id the client named (`conversation_id` is its bus-wide,"
        " per-user id).",
    )
    profile: str | None = Field(
        default=None,
        description="The weir profile the client named (the OpenAI door's `model`); None "
        "where the door has none. The harness may skip the evaluator for some profiles.",
        examples=["weir-chat"],
    )


class AnswerDelta(Event):
    """A coalesced piece of the streamed answer, sent straight to the requester's `reply_to`."""

    type: Literal["answer.delta"] = "answer.delta"
    seq: int = Field(ge=0, description="Position of this piece in the answer of this attempt.")
    attempt: int = Field(
        default=1, ge=1, description="Generation attempt; a higher one restarts the text."
    )
    text: str


class RunCompleted(Event):
    """The run ended with an answer."""

    type: Literal["run.completed"] = "run.completed"
    text: str = Field(description="The whole answer.")
    intent: str | None = None
    route: str | None = None
    offline: bool = Field(
        default=False, description="Answered by the offline responder, not a model."
    )


class RunFailed(Event):
    """The run ended without an answer."""

    type: Literal["run.failed"] = "run.failed"
    code: str = Field(examples=["step_exhausted", "invalid_request"])
    reason: str


class ConversationTitled(Event):
    """Memory → the requester's `reply_to`: a conversation got its automatic title."""

    type: Literal["conversation.titled"] = "conversation.titled"
    client_conversation_id: str = Field(description="The conversation id the client knows.")
    title: str = Field(examples=["Planning a trip to Kyoto"])
