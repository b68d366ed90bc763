"""The OpenAI chat-completions wire format: requests in, completions and chunks out.

Only what weir can honour is read: `model` names a weir profile, the last `messages` entry
is the user's turn, `stream` and `stream_options.include_usage` shape the answer, `user`
keeps one API key's end users in separate conversations. Other sampling fields
(`temperature`, `max_tokens`…) are accepted and ignored: the profile decides. weir's own
additions ride in an extension field `weir` that strict clients ignore.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from weir_gateway.frames import CONVERSATION_ID


@dataclass(frozen=True, slots=True)
class Profile:
    """What a weir "model" switches on for its turns."""

    knowledge: bool
    tools: bool
    description: str


PROFILES = {
    "weir": Profile(True, True, "weir decides: chat, knowledge or tools for each message"),
    "weir-chat": Profile(False, False, "plain chat with memory; no knowledge base, no tools"),
    "weir-rag": Profile(True, False, "answers from the knowledge base, with sources"),
    "weir-agent": Profile(True, True, "knowledge base and tools (MCP), step by step"),
}


class TextPart(BaseModel):
    """A text part of a message's content (other kinds are refused)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["text"]
    text: str


class Message(BaseModel):
    """One message of the conversation the client sends."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        """The message's text (its text parts joined)."""
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(BaseModel):
    """`stream_options`: only `include_usage` is read."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class CompletionRequest(BaseModel):
    """`POST /v1/chat/completions`."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(default=None, max_length=256)
    conversation_id: str | None = Field(
        default=None, pattern=CONVERSATION_ID, description="weir extension: the conversation."
    )
    private: bool = Field(default=False, description="weir extension: keep out of memory.")

    def question(self) -> str:
        """The user's turn: the text of the last message, which must be the user's."""
        last = self.messages[-1]
        if last.role != "user" or not last.text().strip():
            raise ValueError("the last message must be the user's, with text")
        return last.text()

    def conversation(self) -> str:
        """The weir conversation of this chat: the one named, or one derived from how the
        chat began (a client resending the whole history each turn stays in it)."""
        if self.conversation_id:
            return self.conversation_id
        opening = [m.text() for m in self.messages if m.role in ("system", "developer")][:1]
        first = next(m.text() for m in self.messages if m.role == "user")
        seed = "\x1f".join([self.user or "", *opening, first])
        return "oai-" + hashlib.sha256(seed.encode()).hexdigest()[:32]


def error_body(message: str, kind: str, code: str | None = None,
               param: str | None = None) -> dict[str, Any]:  # fmt: skip
    """An error in OpenAI's shape (the SDKs raise it with `message` and `code`)."""
    return {"error": {"message": message, "type": kind, "code": code, "param": param}}
