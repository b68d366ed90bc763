"""Tool events: the catalogue, tool calls, and ReAct planning steps."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from weir_common.events.base import Event, StepCommand, StepResult
from weir_common.events.parts import Citation, Observation, ProposedCall
from weir_common.events.steps import MemoryContext


class ToolInfo(BaseModel):
    """One tool as the planner sees it."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    server: str = Field(description="The MCP server (or 'builtin') that provides it.")
    confirm: bool = Field(
        default=False,
        description="Each call needs the user's approval first: the tool may change things "
        "(its MCP annotations say destructive or not read-only, or the catalogue settings "
        "mark it so).",
    )


class ServerStatus(BaseModel):
    """Whether a tool server is connected."""

    model_config = ConfigDict(frozen=True)

    name: str
    connected: bool
    detail: str = ""


class ToolsCatalogUpdated(Event):
    """Tools → everyone: the whole current catalogue (a fact; the latest one wins)."""

    type: Literal["tools.catalog.updated"] = "tools.catalog.updated"
    tools: list[ToolInfo] = Field(default_factory=list)
    servers: list[ServerStatus] = Field(default_factory=list)


class ToolCallItem(BaseModel):
    """One call of a tool-call step. `idempotency_key` makes a retried call safe."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str


class ToolCallResult(BaseModel):
    """What one call returned (an error result is still a result)."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str
    is_error: bool = False
    duration_ms: float = 0.0


class ToolsCallRequested(StepCommand):
    """Harness → tools: make these calls, concurrently; one result per call, in order."""

    type: Literal["tools.call.requested"] = "tools.call.requested"
    calls: list[ToolCallItem] = Field(min_length=1)
    timeout_s: float = Field(default=30.0, gt=0, description="The limit of each call.")


class ToolsCallCompleted(StepResult):
    """Tools → harness: every call's result, in the order of the request."""

    type: Literal["tools.call.completed"] = "tools.call.completed"
    results: list[ToolCallResult] = Field(min_length=1)


ConfirmReason = Literal["side_effects", "policy"]
Remember = Literal["once", "conversation", "always"]


class ToolConfirmationRequested(Event):
    """Harness → requester: a planned call waits for the user's approval (the run is parked
    until `expires_at`; no answer by then counts as a denial)."""

    type: Literal["tool.confirmation.requested"] = "tool.confirmation.requested"
    call_id: str = Field(description="Names this call in the answer (ToolConfirmationGiven).")
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    server: str = ""
    expires_at: datetime
    reason: ConfirmReason = Field(
        default="side_effects",
        description="side_effects: the catalogue marks the tool as changing things; "
        "policy: the user's own settings ask for it.",
    )


class ToolConfirmationGiven(Event):
    """Requester → harness: the user's answer to a ToolConfirmationRequested. `user_id` is
    the verified identity of whoever answered; only the run's own user is obeyed."""

    type: Literal["tool.confirmation.given"] = "tool.confirmation.given"
    call_id: str
    approve: bool
    remember: Remember = Field(
        default="once",
        description="once: this call only; conversation: this tool in this conversation; "
        "always: this tool for this user (stored as the user's tool policy).",
    )


class ReactStepRequested(StepCommand):
    """Harness → router: decide the next action of a ReAct loop, or finish."""

    type: Literal["react.step.requested"] = "react.step.requested"
    query: str
    context: MemoryContext = Field(default_factory=MemoryContext)
    observations: list[Observation] = Field(default_factory=list)
    model_turns_left: int = Field(ge=0)
    tool_calls_left: int = Field(ge=0)


class ReactStepDecided(StepResult):
    """Router → harness: a thought, then a tool call (or several), or nothing more to do."""

    type: Literal["react.step.decided"] = "react.step.decided"
    thought: str = ""
    tool: str | None = Field(default=None, description="None: enough evidence, answer now.")
    arguments: dict[str, Any] = Field(default_factory=dict)
    calls: list[ProposedCall] = Field(
        default_factory=list,
        description="Further calls to run concurrently with `tool` (the model may ask several).",
    )
    discovery: bool = Field(
        default=False,
        description="The call only finds what the next call needs (e.g. a server's allowed "
        "directories); a single-tool route still makes its one call after it.",
    )
    unfilled: str | None = Field(
        default=None,
        description="Why the tool that fits was not called (a required argument the message "
        "does not give); the answer says so.",
    )

    def proposed(self) -> list[ProposedCall]:
        """Every call this step asks for: `tool` first, then `calls`."""
        first = [ProposedCall(tool=self.tool, arguments=self.arguments)] if self.tool else []
        return first + list(self.calls)


class RunStep(Event):
    """Harness → requester: a visible step of the run (thought, action, observation)."""

    type: Literal["run.step"] = "run.step"
    kind: Literal["thought", "action", "observation", "retrieval"]
    content: str
    tool: str | None = None
    arguments: dict[str, Any] | None = Field(
        default=None, description="The call's arguments as an object (action and observation)."
    )
    sources: list[Citation] = Field(
        default_factory=list, description="The passages retrieved (retrieval steps)."
    )
