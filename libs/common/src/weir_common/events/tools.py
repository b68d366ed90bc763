"""Tool events: the catalogue, tool calls, and ReAct planning steps."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from weir_common.events.base import Event, StepCommand, StepResult
from weir_common.events.parts import Observation
from weir_common.events.steps import MemoryContext


class ToolInfo(BaseModel):
    """One tool as the planner sees it."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    server: str = Field(description="The MCP server (or 'builtin') that provides it.")


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


class ToolsCallRequested(StepCommand):
    """Harness → tools: call one tool. `idempotency_key` makes a retried call safe."""

    type: Literal["tools.call.requested"] = "tools.call.requested"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str
    timeout_s: float = Field(default=30.0, gt=0)


class ToolsCallCompleted(StepResult):
    """Tools → harness: the tool's result (an error result is still a result)."""

    type: Literal["tools.call.completed"] = "tools.call.completed"
    tool: str
    content: str
    is_error: bool = False
    duration_ms: float = 0.0


class ReactStepRequested(StepCommand):
    """Harness → router: decide the next action of a ReAct loop, or finish."""

    type: Literal["react.step.requested"] = "react.step.requested"
    query: str
    context: MemoryContext = Field(default_factory=MemoryContext)
    observations: list[Observation] = Field(default_factory=list)
    model_turns_left: int = Field(ge=0)
    tool_calls_left: int = Field(ge=0)


class ReactStepDecided(StepResult):
    """Router → harness: a thought, then a tool call, or nothing more to do."""

    type: Literal["react.step.decided"] = "react.step.decided"
    thought: str = ""
    tool: str | None = Field(default=None, description="None: enough evidence, answer now.")
    arguments: dict[str, Any] = Field(default_factory=dict)


class RunStep(Event):
    """Harness → requester: a visible step of the run (thought, action, observation)."""

    type: Literal["run.step"] = "run.step"
    kind: Literal["thought", "action", "observation", "retrieval"]
    content: str
    tool: str | None = None
