"""The durable shape of a run: what the harness snapshots after every step."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from weir_common.events import (
    ChatRequested,
    Intent,
    MemoryContext,
    Observation,
    Passage,
    Route,
)


class RunStatus(StrEnum):
    """Where a run is in its life."""

    QUEUED = "queued"  # waiting for an earlier run of the same conversation
    RUNNING = "running"
    AWAITING_CONFIRMATION = "awaiting_confirmation"  # a tool call waits for the user's OK
    FINISHING = "finishing"  # answered; its turn is being written to memory
    COMPLETED = "completed"
    FAILED = "failed"


# a run waiting for confirmation still holds its conversation (later turns queue behind it)
ACTIVE = (RunStatus.RUNNING, RunStatus.AWAITING_CONFIRMATION, RunStatus.FINISHING)


class RunState(BaseModel):
    """What the steps produced so far."""

    context: MemoryContext | None = None
    intent: Intent | None = None
    route: Route | None = None
    rule: str | None = None
    answer: str | None = None
    model: str | None = None
    offline: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evidence: list[Passage] = Field(default_factory=list)
    observations: list[Observation] = Field(default_factory=list)
    model_turns: int = Field(default=0, description="Model calls this run made (F24).")
    tool_calls: int = Field(default=0, description="Tool calls this run made (F24).")
    discovery_calls: int = Field(
        default=0, description="Of those, calls that only found what the next one needs."
    )
    call_counts: dict[str, int] = Field(default_factory=dict, description="Per tool+arguments.")
    pending_calls: list[PlannedCall] = Field(
        default_factory=list, description="Calls of this step not yet sent (or awaiting approval)."
    )
    calls_from: Literal["plan", "answer"] = Field(
        default="plan", description="Who asked for the pending calls: a planner or the model."
    )
    generations: int = Field(
        default=0, description="Answer commands sent (retries too); the deltas' attempt."
    )
    evaluator_failures: list[str] = Field(
        default_factory=list, description="Each failed answer check's reason, in order (F39)."
    )
    revision_note: str | None = Field(
        default=None, description="The last failed check's reason, sent with the regeneration."
    )
    evaluator_failed: bool = Field(
        default=False, description="The delivered answer still failed the check (F39)."
    )
    candidate: Candidate | None = Field(
        default=None, description="The answer that passed the rules, while the judge looks."
    )
    awaiting: ConfirmationWait | None = Field(
        default=None, description="The call parked until the user approves or denies it."
    )
    loop_started_at: datetime | None = None
    step_sent_at: datetime | None = Field(
        default=None, description="When the pending command was sent (step latency metric)."
    )
    route_sent: str | None = Field(
        default=None,
        description="The route command sent alongside the memory step, until it is answered.",
    )
    stop_reason: str | None = Field(default=None, description="Which budget ended the loop.")
    notes: list[str] = Field(
        default_factory=list, description="For the answer: e.g. a tool not called, and why."
    )


class Candidate(BaseModel):
    """A generated answer waiting for the judge's verdict (F39)."""

    text: str
    model: str | None = None


class PlannedCall(BaseModel):
    """The tool call the planner chose, waiting to be sent."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought: str = ""
    ask: bool = Field(default=False, description="Waits for the user's approval first.")

    @property
    def signature(self) -> str:
        """Tool plus canonical arguments: identical calls have the same signature."""
        return f"{self.tool}:{json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)}"


class ConfirmationWait(BaseModel):
    """A planned call that waits for the user's approval (weir_harness.confirmation)."""

    call_id: str
    call: PlannedCall
    server: str = ""
    reason: str = "side_effects"
    asked_at: datetime
    expires_at: datetime


class Run(BaseModel):
    """One run: a chat request and the state machine answering it."""

    run_id: str
    conversation_id: str
    user_id: str | None
    status: RunStatus
    request: ChatRequested
    state: RunState = Field(default_factory=RunState)
    step: str | None = Field(default=None, description="The command type awaiting a result.")
    pending_event_id: str | None = None
    attempt: int = 0
    deadline: datetime | None = None
    retry_at: datetime | None = None
    traceparent: str | None = None
    error: str | None = None


RunState.model_rebuild()
