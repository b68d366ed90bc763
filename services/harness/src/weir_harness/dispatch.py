"""Tool calls asked for by a planner or by the model on the answer step, on their way out.

Each proposed call passes, in order: the tool-call budget of the step (F24: what is left of
`AGENT_MAX_TOOL_CALLS`, one call on a single-tool route), the repeated-call rule (the same
tool with the same arguments at most `AGENT_MAX_REPEATED_TOOL_CALLS` times), and the
confirmation gate (weir_harness.confirmation: the user's policies, the catalogue's `confirm`
flag). A call refused on the way becomes an error observation saying why, so the answer can
say it too. The calls that pass are kept as the run's `pending_calls`; the ones that need
the user's approval park the run first (one at a time), then all are sent as one
`tools.call.requested`, which the tools service runs concurrently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from weir_common.events import Event, Observation, ProposedCall, RunStep
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import CONFIRM, NO_POLICIES, Policies, gate, refused_by_policy
from weir_harness.models import PlannedCall, Run
from weir_harness.settings import HarnessSettings
from weir_harness.steps import CALL, GENERATE, after_observation, tool_calls_left

Source = Literal["plan", "answer"]
Note = tuple[str, dict[str, Any]]


def dispatch(
    run: Run,
    proposed: Sequence[ProposedCall],
    settings: HarnessSettings,
    caps: Capabilities,
    policies: Policies = NO_POLICIES,
    *,
    source: Source = "plan",
    thought: str = "",
) -> tuple[str, list[Event], list[Note]]:
    """Gate `proposed`; the next step, the visible steps and the notes for the run record."""
    state = run.state
    replies: list[Event] = []
    notes: list[Note] = []
    left = tool_calls_left(run, settings)
    pending: list[PlannedCall] = []
    denied = False
    for proposal in proposed:
        call = PlannedCall(tool=proposal.tool, arguments=proposal.arguments, thought=thought)
        refused = _refusal(run, call, len(pending), left, settings)
        if refused is not None:
            text, note = refused
            state.observations.append(
                Observation(tool=call.tool, arguments=call.arguments, content=text, is_error=True)
            )
            replies.append(
                RunStep(kind="observation", content=text, tool=call.tool,
                        arguments=call.arguments, **run.request.envelope())
            )  # fmt: skip
            notes.append(note)
            continue
        gated = gate(call, caps, policies)
        if gated.action == "deny":
            observation, step = refused_by_policy(run, call)
            state.observations.append(observation)
            replies.append(step)
            notes.append(("confirmation", {"decision": "policy_denied", "tool": call.tool}))
            denied = True
            continue
        state.call_counts[call.signature] = state.call_counts.get(call.signature, 0) + 1
        call.ask = gated.action == "ask"
        pending.append(call)
        replies.append(action_step(run, call))
    state.pending_calls = pending
    state.calls_from = source
    if denied and not pending:  # the user's settings said no: answer, saying so
        return GENERATE, replies, notes
    return next_for_calls(run, settings), replies, notes


def next_for_calls(run: Run, settings: HarnessSettings) -> str:
    """Ask for the next approval, send the pending calls, or go on without them."""
    state = run.state
    if any(call.ask for call in state.pending_calls):
        return CONFIRM
    if state.pending_calls:
        return CALL
    return after_calls(run, settings)


def after_calls(run: Run, settings: HarnessSettings) -> str:
    """After a step's calls: the model that asked for them on the answer step answers now;
    a planner's loop plans again or answers (weir_harness.steps.after_observation)."""
    if run.state.calls_from == "answer":
        return GENERATE
    return after_observation(run, settings)


def action_step(run: Run, call: PlannedCall) -> RunStep:
    """The visible `action` step of a call: readable content, arguments as an object."""
    content = f"{call.tool}({json.dumps(call.arguments, ensure_ascii=False)})"
    return RunStep(kind="action", content=content, tool=call.tool, arguments=call.arguments,
                   **run.request.envelope())  # fmt: skip


def _refusal(
    run: Run, call: PlannedCall, queued: int, left: int, settings: HarnessSettings
) -> tuple[str, Note] | None:
    """Why the budget refuses `call` (its observation and the record's note), or None."""
    note: Note = ("budget", {"rule": "tool_calls", "tool": call.tool, "arguments": call.arguments})
    if queued >= left:
        return f"Not run: the tool-call budget of this run allows {left} more call(s) here.", note
    if run.state.call_counts.get(call.signature, 0) >= settings.agent_max_repeated_tool_calls:
        text = (
            f"Refused: {call.tool} was already called with these arguments; "
            "its result is above. Use it or answer."
        )
        return text, ("budget", {**note[1], "rule": "repeated_call"})
    return None
