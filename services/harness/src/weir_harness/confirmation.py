"""Confirmation before side effects (issue 13): which planned calls wait for the user's OK,
how a run parks for it, and how the answer (or its expiry) moves the run on.

A planned call is gated, in this order:
1. the user's tool policy for this conversation, then the user's policy for every
   conversation (`tool_policies`; a tool name, or `*` for every tool): `deny` → the call is
   never sent (its observation says the user's settings deny it), `allow` → sent without
   asking, `ask` → confirmed;
2. otherwise the catalogue: a tool marked `confirm` (its MCP annotations say destructive or
   not read-only, or the tools service's settings mark it) is confirmed. A name this
   catalogue does not know is sent: the tools service knows no tool by it either (both read
   the same `tools.catalog.updated`) and answers with the names it has, which a planner
   that invented one needs more than a question to the user;
3. anything else is sent.

A confirmed call parks the run: status `awaiting_confirmation`, step `tool.confirmation`,
no command pending, the run's deadline is the confirmation's expiry. It is all in
PostgreSQL, so a restart of the harness changes nothing. `tool.confirmation.requested` goes
to the requester. Only the run's own user's `tool.confirmation.given` for the waiting call
id moves it on: approve → the call is sent (once: the run is no longer waiting, so a
duplicate answer finds nothing to approve); deny, no answer by the expiry, or a new message
of the user in that conversation instead of an answer ("superseded") → the call ends with an
observation saying so and the run answers (then the new message's run starts). An expiry
makes the verdict `needs_human` (weir_harness.diagnosis).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from weir_common.events import (
    ConfirmReason,
    Observation,
    RunStep,
    ToolConfirmationGiven,
    ToolConfirmationRequested,
    new_id,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import ConfirmationWait, PlannedCall, Run, RunStatus
from weir_harness.settings import HarnessSettings

CONFIRM = "tool.confirmation"
"""The step of a parked run: no command is out, the user's answer is awaited."""

PolicyDecision = Literal["allow", "deny", "ask"]
POLICY_DECISIONS: tuple[PolicyDecision, ...] = ("allow", "deny", "ask")
EVERY_TOOL = "*"


@dataclass(frozen=True)
class Policies:
    """A user's tool policies as they apply to one conversation."""

    conversation: dict[str, PolicyDecision] = field(default_factory=dict)
    user: dict[str, PolicyDecision] = field(default_factory=dict)

    @classmethod
    def of_rows(
        cls, rows: Iterable[tuple[str | None, str, PolicyDecision]], conversation_id: str
    ) -> Policies:
        """From `(conversation_id or None, tool, decision)` rows of one user."""
        mine: dict[str, PolicyDecision] = {}
        every: dict[str, PolicyDecision] = {}
        for conversation, tool, decision in rows:
            if conversation is None:
                every[tool] = decision
            elif conversation == conversation_id:
                mine[tool] = decision
        return cls(mine, every)

    def decision(self, tool: str) -> PolicyDecision | None:
        """The most specific policy for `tool`: this conversation's, then the user's."""
        for level in (self.conversation, self.user):
            found = level.get(tool) or level.get(EVERY_TOOL)
            if found is not None:
                return found
        return None


NO_POLICIES = Policies()


@dataclass(frozen=True)
class Gate:
    """What happens to a planned call: sent, asked for, or refused; and why."""

    action: Literal["send", "ask", "deny"]
    reason: Literal["", "policy", "side_effects"] = ""


def gate(call: PlannedCall, caps: Capabilities, policies: Policies) -> Gate:
    """The gate of one planned call (see the module's doc for the order)."""
    policy = policies.decision(call.tool)
    if policy == "deny":
        return Gate("deny", "policy")
    if policy == "allow":
        return Gate("send", "policy")
    info = caps.tools.get(call.tool)
    if info is not None and info.confirm:
        return Gate("ask", "side_effects")
    if policy == "ask":
        return Gate("ask", "policy")
    return Gate("send")


def refused_by_policy(run: Run, call: PlannedCall) -> tuple[Observation, RunStep]:
    """The observation (and its visible step) of a call the user's settings deny."""
    text = f"Not run: the user's settings deny the tool {call.tool}."
    observation = Observation(tool=call.tool, arguments=call.arguments, content=text,
                              is_error=True)  # fmt: skip
    step = RunStep(kind="observation", content=text, tool=call.tool, **run.request.envelope())
    return observation, step


def park(
    run: Run, call: PlannedCall, caps: Capabilities, now: datetime, settings: HarnessSettings
) -> ToolConfirmationRequested:
    """Park `run` until the user answers for `call`; the request to send to the user."""
    info = caps.tools.get(call.tool)
    reason: ConfirmReason = "side_effects" if info is not None and info.confirm else "policy"
    wait = ConfirmationWait(
        call_id=new_id(),
        call=call,
        server=info.server if info is not None else "",
        reason=reason,
        asked_at=now,
        expires_at=now + timedelta(seconds=settings.tool_confirm_timeout_s),
    )
    run.state.awaiting = wait
    run.status = RunStatus.AWAITING_CONFIRMATION
    run.step, run.attempt, run.pending_event_id = CONFIRM, 1, wait.call_id
    run.deadline, run.retry_at = wait.expires_at, None
    run.state.step_sent_at = now
    return ToolConfirmationRequested(
        call_id=wait.call_id,
        tool=call.tool,
        arguments=call.arguments,
        server=wait.server,
        expires_at=wait.expires_at,
        reason=reason,
        **run.request.envelope(),
    )


def answerable(run: Run | None, given: ToolConfirmationGiven) -> str | None:
    """Why `given` cannot answer `run` (None: it can)."""
    if run is None:
        return "no such run"
    wait = run.state.awaiting
    if run.status is not RunStatus.AWAITING_CONFIRMATION or wait is None:
        return "the run is not waiting for a confirmation"
    if wait.call_id != given.call_id:
        return "the run waits for another call"
    if run.user_id is None or given.user_id != run.user_id:
        return "only the run's own user can answer"
    return None


Outcome = Literal["approved", "denied", "expired", "superseded"]


def resume(run: Run, outcome: Outcome, now: datetime) -> RunStep | None:
    """Unpark `run`: an approved call stays pending without its question; a denied, expired
    or superseded one leaves the pending calls with an observation saying why (returned as
    the visible step)."""
    wait = run.state.awaiting
    if wait is None:
        raise ValueError("the run is not waiting for a confirmation")
    state, call = run.state, wait.call
    state.awaiting = None
    run.status = RunStatus.RUNNING
    run.deadline = None
    if state.loop_started_at is not None:  # waiting for the user is not the tool loop's time
        state.loop_started_at += max(now - wait.asked_at, timedelta(0))
    waiting = next((c for c in state.pending_calls if c.ask), None)
    if outcome == "approved":
        if waiting is not None:
            waiting.ask = False
        return None
    if outcome == "denied":
        text = f"The user declined this call, so {call.tool} was not run."
    elif outcome == "superseded":
        text = (
            f"The user sent a new message instead of confirming this call, so {call.tool} "
            "was not run."
        )
    else:
        text = f"No confirmation came in time, so {call.tool} was not run (the request expired)."
    if waiting is not None:
        state.pending_calls.remove(waiting)
    state.observations.append(
        Observation(tool=call.tool, arguments=call.arguments, content=text, is_error=True)
    )
    return RunStep(kind="observation", content=text, tool=call.tool, arguments=call.arguments,
                   **run.request.envelope())  # fmt: skip
