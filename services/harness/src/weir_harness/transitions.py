"""How a run moves on: each worker result folded into the run, and the next step chosen.

Pure functions over the run's state (no database, no broker), so every route and every
budget rule (F24) is testable on its own. The run service applies the decision in one
transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from weir_common.events import (
    AnswerGenerated,
    Event,
    HarnessResult,
    MemoryContextReady,
    Observation,
    RagRetrieveCompleted,
    ReactStepDecided,
    RouteDecided,
    RunCompleted,
    RunStep,
    ToolsCallCompleted,
    TurnRecorded,
)
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import CONFIRM, NO_POLICIES, Policies, gate, refused_by_policy
from weir_harness.models import PlannedCall, Run, RunStatus
from weir_harness.settings import HarnessSettings
from weir_harness.steps import CALL, GENERATE, LOOP_STEPS, PLAN, after_observation, after_route

DONE = None


@dataclass
class Decision:
    """What follows a result: the next command (None: the run is complete) and replies."""

    next_step: str | None
    replies: list[Event] = field(default_factory=list)
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def decide(
    run: Run,
    result: HarnessResult,
    caps: Capabilities,
    settings: HarnessSettings,
    policies: Policies = NO_POLICIES,
) -> Decision:
    """Fold `result` into `run.state` and choose what comes next."""
    if isinstance(result, MemoryContextReady):
        run.state.context = result.context
        return Decision("route.requested")
    if isinstance(result, RouteDecided):
        run.state.intent, run.state.route, run.state.rule = result.intent, result.route, result.rule
        return Decision(after_route(run, caps))
    if isinstance(result, RagRetrieveCompleted):
        return _retrieved(run, result)
    if isinstance(result, ReactStepDecided):
        return _planned(run, result, settings, caps, policies)
    if isinstance(result, ToolsCallCompleted):
        return _observed(run, result, settings)
    return _answered(run, result)


def _answered(run: Run, result: HarnessResult) -> Decision:
    if isinstance(result, TurnRecorded):
        return Decision(DONE)
    if not isinstance(result, AnswerGenerated):
        raise TypeError(f"no transition for {result.type}")
    state = run.state
    state.answer, state.model, state.offline = result.text, result.model, result.offline
    state.prompt_tokens += result.prompt_tokens
    state.completion_tokens += result.completion_tokens
    run.status = RunStatus.FINISHING
    return Decision("turn.completed", [completed(run)])


def _retrieved(run: Run, result: RagRetrieveCompleted) -> Decision:
    run.state.evidence = list(result.passages)
    sources = ", ".join(dict.fromkeys(p.source for p in result.passages)) or "nothing found"
    step = RunStep(kind="retrieval", content=sources, **run.request.envelope())
    return Decision(GENERATE, [step])


def _planned(
    run: Run,
    decided: ReactStepDecided,
    settings: HarnessSettings,
    caps: Capabilities,
    policies: Policies = NO_POLICIES,
) -> Decision:
    state, envelope = run.state, run.request.envelope()
    replies: list[Event] = []
    if decided.thought:
        replies.append(RunStep(kind="thought", content=decided.thought, **envelope))
    if decided.tool is None:
        if decided.unfilled:
            state.notes.append(decided.unfilled)
        return Decision(GENERATE, replies)
    call = PlannedCall(tool=decided.tool, arguments=decided.arguments, thought=decided.thought)
    if state.call_counts.get(call.signature, 0) >= settings.agent_max_repeated_tool_calls:
        refusal = (
            f"Refused: {call.tool} was already called with these arguments; "
            "its result is above. Use it or answer."
        )
        state.observations.append(Observation(tool=call.tool, arguments=call.arguments,
                                              content=refusal, is_error=True))  # fmt: skip
        replies.append(RunStep(kind="observation", content=refusal, tool=call.tool, **envelope))
        note = ("budget", {"rule": "repeated_call", "tool": call.tool, "arguments": call.arguments})
        return Decision(after_observation(run, settings), replies, [note])
    state.call_counts[call.signature] = state.call_counts.get(call.signature, 0) + 1
    gated = gate(call, caps, policies)  # confirmation before side effects (confirmation.py)
    if gated.action == "deny":
        observation, step = refused_by_policy(run, call)
        state.observations.append(observation)
        note = ("confirmation", {"decision": "policy_denied", "tool": call.tool})
        return Decision(GENERATE, [*replies, step], [note])
    state.next_call = call
    state.discovery_calls += decided.discovery
    action = f"{call.tool}({json.dumps(call.arguments, ensure_ascii=False)})"
    replies.append(
        RunStep(kind="action", content=action, tool=call.tool, arguments=call.arguments, **envelope)
    )
    return Decision(CONFIRM if gated.action == "ask" else CALL, replies)


def _observed(run: Run, done: ToolsCallCompleted, settings: HarnessSettings) -> Decision:
    state = run.state
    call = state.next_call
    arguments = call.arguments if call else {}
    state.observations.append(
        Observation(
            tool=done.tool, arguments=arguments, content=done.content, is_error=done.is_error
        )
    )
    state.tool_calls += 1
    state.next_call = None
    step = RunStep(
        kind="observation",
        content=done.content,
        tool=done.tool,
        arguments=arguments,
        **run.request.envelope(),
    )
    following = after_observation(run, settings)
    notes = [("budget", {"rule": state.stop_reason})] if state.stop_reason else []
    return Decision(following, [step], notes)


def out_of_time(run: Run, step: str, settings: HarnessSettings, now: datetime) -> bool:
    """True when the tool loop has used its time budget and `step` would extend it."""
    started = run.state.loop_started_at
    limit = timedelta(seconds=settings.agent_max_runtime_seconds)
    return step in LOOP_STEPS and started is not None and now - started >= limit


def stop_for_time(run: Run, settings: HarnessSettings) -> Decision:
    """End the loop on the time budget with a clear answer, without another model call."""
    state = run.state
    state.stop_reason = f"the time budget ({settings.agent_max_runtime_seconds:g} s) is used up"
    found = [f"- {o.tool}: {o.content[:300]}" for o in state.observations if not o.is_error]
    state.answer = "\n".join(
        [
            f"I had to stop: {state.stop_reason} for this request, so this answer is incomplete.",
            *(
                ["What the tools returned so far:", *found]
                if found
                else ["No tool returned a result in time."]
            ),
        ]
    )
    run.status = RunStatus.FINISHING
    note = ("budget", {"rule": "runtime", "seconds": settings.agent_max_runtime_seconds})
    return Decision("turn.completed", [completed(run)], [note])


def counts_as_model_turn(step: str) -> bool:
    """Planning and answering each cost one model turn."""
    return step in (PLAN, GENERATE)


def completed(run: Run) -> RunCompleted:
    """The run's answer for the requester."""
    state = run.state
    return RunCompleted(
        text=state.answer or "",
        intent=state.intent.value if state.intent else None,
        route=state.route.value if state.route else None,
        offline=state.offline,
        **run.request.envelope(),
    )
