"""What a tool call returns, whoever ran it (an MCP server or a built-in tool)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolOutcome(BaseModel):
    """The result of one tool call, as text for the model.

    `stored` says whether the result may be replayed for the same idempotency key: true for
    what the tool itself answered (success or its own error), false for failures around it
    (server unavailable, time-out, unknown tool, not configured) that a retry may fix.
    """

    model_config = ConfigDict(frozen=True)

    content: str
    is_error: bool = False
    duration_ms: float = 0.0
    stored: bool = Field(default=True, description="Kept for replays of the same key.")
    replayed: bool = Field(default=False, description="Served from an earlier identical call.")

    @classmethod
    def failure(cls, content: str) -> ToolOutcome:
        """An error around the tool, not from it: never stored, so a retry calls again."""
        return cls(content=content, is_error=True, stored=False)


class CallRequest(BaseModel):
    """A tool call as the HTTP edge receives it (the Kafka edge uses `ToolsCallRequested`)."""

    model_config = ConfigDict(frozen=True)

    tool: str = Field(examples=["echo"])
    arguments: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    idempotency_key: str | None = Field(default=None, description="Unset: never replayed.")
    user_id: str | None = None


class CallResponse(BaseModel):
    """The HTTP answer to a `CallRequest`."""

    tool: str
    content: str
    is_error: bool
    duration_ms: float
    replayed: bool


def truncate(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [truncated {len(text) - limit} characters]"
