"""The WebSocket frame format, both directions, as typed models.

Client → server: `chat` (a message), `resume` (a run of a lost connection) and `ping`.
Server → client: `ready`, `accepted`, `resumed`, `step`, `delta`, `reset`, `done`, `error`,
`pong`; every server frame carries `seq`, the frame's
position on this connection, so a client can detect loss.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

CONVERSATION_ID = r"^[A-Za-z0-9_.:-]{1,128}$"


class ChatFrame(BaseModel):
    """A chat message from the client."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["chat"]
    text: str = Field(min_length=1)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID)
    id: str | None = Field(default=None, max_length=128, description="Client's message id.")
    private: bool = False
    knowledge: bool = Field(default=True, description="Use the knowledge base this turn.")
    tools: bool = Field(default=True, description="Allow tool calls this turn.")


class PingFrame(BaseModel):
    """Keep-alive; answered by `pong`."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["ping"]


class ResumeFrame(BaseModel):
    """Pick up a run after a lost connection: the rest of its stream, or its final answer."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["resume"]
    run_id: str = Field(pattern=CONVERSATION_ID, description="From the run's `accepted` frame.")
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID)
    after: int | None = Field(
        default=None,
        ge=-1,
        description="The `index` of the last `delta` the client has; the stream goes on "
        "after it (none: the whole answer again).",
    )
    attempt: int = Field(
        default=1, ge=1, description="The generation `attempt` that delta belonged to."
    )


ClientFrame = Annotated[ChatFrame | PingFrame | ResumeFrame, Field(discriminator="type")]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)

CLIENT_FRAME_TYPES = ("chat", "ping", "resume")
