"""The WebSocket frame format, both directions, as typed models.

Client → server: `chat` (a message), `resume` (a run of a lost connection), `confirm` (the
answer for a tool call waiting for approval) and `ping`.
Server → client: `ready`, `accepted`, `resumed`, `step`, `confirm`, `confirmed`, `delta`,
`reset`, `done`, `error`, `pong`, `title`; every server frame carries `seq`, the frame's
position on this connection, so a client can detect loss.

`confirm` (`{"type": "confirm", "run_id", "call_id", "tool", "arguments": {…}, "server",
"expires_at", "reason": "side_effects"|"policy"}`): the run waits until the user approves or
denies that call (weir_gateway.confirm_api); `confirmed` acknowledges the client's answer
(`{"type": "confirmed", "run_id", "call_id", "approve", "remember"}`), after which the run
goes on as usual.

`title` (`{"type": "title", "conversation_id": …, "title": …, "seq": …}`) comes once per
conversation, after the `done` of its first turn, on every socket of that user open on the
gateway that ran the turn: the conversation's automatic title (F07). A socket closed by
then misses it; `GET /api/conversations` has it.
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
    knowledge: bool = Field(default=True, description="Search the knowledge base this turn.")
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


class ConfirmFrame(BaseModel):
    """The user's answer for a tool call waiting for approval (a `confirm` frame's)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["confirm"]
    run_id: str = Field(pattern=CONVERSATION_ID)
    call_id: str = Field(min_length=1, max_length=128)
    approve: bool
    remember: Literal["once", "conversation", "always"] = "once"


ClientFrame = Annotated[
    ChatFrame | PingFrame | ResumeFrame | ConfirmFrame, Field(discriminator="type")
]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)

CLIENT_FRAME_TYPES = ("chat", "ping", "resume", "confirm")
