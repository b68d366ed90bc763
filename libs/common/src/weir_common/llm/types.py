"""Provider-neutral chat types: messages, tools, completions and stream items."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One complete tool call requested by the model."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        """Render in the OpenAI ``tool_calls`` wire format (arguments as a JSON string)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


class ChatMessage(BaseModel):
    """One chat message in OpenAI-compatible shape."""

    role: Role
    content: str = ""
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None

    def to_openai(self) -> dict[str, Any]:
        """Render as the dict litellm / OpenAI expect."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.tool_calls:
            out["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        return out


class ToolSpec(BaseModel):
    """A tool the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        """Render in the OpenAI ``tools`` format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class Usage(BaseModel):
    """Token accounting reported by the provider (zeros when unknown)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class TextDelta(BaseModel):
    """A fragment of assistant text, in order."""

    kind: Literal["text"] = "text"
    text: str


class ToolCallsReady(BaseModel):
    """All tool calls of the turn, fully assembled from stream fragments."""

    kind: Literal["tool_calls"] = "tool_calls"
    tool_calls: list[ToolCall]


class StreamEnd(BaseModel):
    """Last item of every successful stream."""

    kind: Literal["end"] = "end"
    model: str
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


StreamItem = TextDelta | ToolCallsReady | StreamEnd


class Completion(BaseModel):
    """A whole (non-streamed or fully collected) model answer."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None


class LLMError(Exception):
    """A model call failed. ``transient`` says whether retrying may help."""

    def __init__(self, transient: bool, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.message = message
        self.status_code = status_code

    def __repr__(self) -> str:
        return (
            f"LLMError(transient={self.transient}, status_code={self.status_code}, "
            f"message={self.message!r})"
        )
