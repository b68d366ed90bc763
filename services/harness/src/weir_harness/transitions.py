"""How a run moves on: each worker result folded into the run, and the next step chosen.

Pure functions over the run's state (no database, no broker), so every route and every
budget rule (F24) is testable on its own. The run service applies the decision in one
transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from weir_common.events import (
    AnswerEvaluated,
    AnswerGenerated,
    Citation,
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
from weir_harness.confirmation import NO_POLICIES, Policies
from weir_harness.dispatch import after_calls, dispatch
from weir_harness.evaluator import check_answer, judged
from weir_harness.models import Candidate, Run, RunStatus
from weir_harness.settings import HarnessSettings
from weir_harness.steps import EVALUATE, GENERATE, LOOP_STEPS, PLAN, ROUTE, after_route

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
        return _remembered(run, result, caps)
    if isinstance(result, RouteDecided):
        take_route(run, result)
        return Decision(after_route(run, caps))
    if isinstance(result, RagRetrieveCompleted):
        return _retrieved(run, result)
    if isinstance(result, ReactStepDecided):
        return _planned(run, result, settings, caps, policies)
    if isinstance(result, ToolsCallCompleted):
        return _observed(run, result, settings)
    return _answered(run, result, settings, caps, policies)


def take_route(run: Run, result: RouteDecided) -> None:
    """Fold the router's decision into the run's state."""
    run.state.intent, run.state.route, run.state.rule = result.intent, result.route, result.rule


def _remembered(run: Run, result: MemoryContextReady, caps: Capabilities) -> Decision:
    run.state.context = result.context
    if run.state.route is not None:  # decided while memory worked (`route_with_memory`)
        return Decision(after_route(run, caps))
    return Decision(ROUTE)


def _answered(
    run: Run,
    result: HarnessResult,
    settings: HarnessSettings,
    caps: Capabilities,
    policies: Policies,
) -> Decision:
    if isinstance(result, TurnRecorded):
        return Decision(DONE)
    if isinstance(result, AnswerEvaluated):
        return _evaluated(run, result, settings)
    if not isinstance(result, AnswerGenerated):
        raise TypeError(f"no transition for {result.type}")
    state = run.state
    state.prompt_tokens += result.prompt_tokens
    state.completion_tokens += result.completion_tokens
    if result.tool_calls:  # the model asked for tools instead of answering
        following, steps, notes = dispatch(
            run, result.tool_calls, settings, caps, policies, source="answer", thought=result.text
        )
        return Decision(following, steps, notes)
    reason = check_answer(run, result.text, settings, offline=result.offline)
    if reason is None and judged(run, settings, offline=result.offline):
        state.candidate = Candidate(text=result.text, model=result.model)
        return Decision(EVALUATE)
    return _checked(run, reason, "rules", Candidate(text=result.text, model=result.model),
                    settings, offline=result.offline)  # fmt: skip


def _evaluated(run: Run, result: AnswerEvaluated, settings: HarnessSettings) -> Decision:
    """The judge's verdict on the candidate: deliver it, or regenerate like a failed rule."""
    candidate = run.state.candidate
    if candidate is None:
        raise ValueError("a verdict without an answer to judge")
    run.state.candidate = None
    reason = None if result.passed else result.reason
    decision = _checked(run, reason, "judge", candidate, settings)
    if result.note:  # passed without a judgement: say why in the run record
        decision.notes.append(("evaluator.unjudged", {"note": result.note}))
    return decision


def pass_unjudged(run: Run, why: str) -> Decision:
    """The judge's step failed for good: the candidate is delivered (the judge never blocks
    an answer), and the run record says why it was not judged."""
    candidate = run.state.candidate
    if candidate is None:
        raise ValueError("no answer waits for the judge")
    run.state.candidate = None
    return _deliver(run, candidate, False, [("evaluator.unjudged", {"note": why})])


def _checked(
    run: Run,
    reason: str | None,
    by: str,
    answer: Candidate,
    settings: HarnessSettings,
    *,
    offline: bool = False,
) -> Decision:
    """After a check (`reason` None: passed): regenerate with the reason while regenerations
    are left, else deliver (a failing answer all the same, marked for the verdict)."""
    state = run.state
    checks: list[tuple[str, dict[str, Any]]] = []
    if reason is not None:  # every failed check is a step of the run record
        state.evaluator_failures.append(reason)
        check = len(state.evaluator_failures)
        checks.append(("evaluator.failed", {"reason": reason, "check": check, "by": by}))
        if check <= settings.evaluator_max_regenerations:
            state.revision_note = reason
            return Decision(GENERATE, notes=checks)
        state.evaluator_failed = True
    return _deliver(run, answer, offline, checks)


def _deliver(
    run: Run, answer: Candidate, offline: bool, notes: list[tuple[str, dict[str, Any]]]
) -> Decision:
    state = run.state
    state.answer, state.model, state.offline = answer.text, answer.model, offline
    run.status = RunStatus.FINISHING
    return Decision("turn.completed", [completed(run)], notes)


def _retrieved(run: Run, result: RagRetrieveCompleted) -> Decision:
    run.state.evidence = list(result.passages)
    sources = ", ".join(dict.fromkeys(p.source for p in result.passages)) or "nothing found"
    cited = [Citation.of(p) for p in result.passages]
    step = RunStep(kind="retrieval", content=sources, sources=cited, **run.request.envelope())
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
    proposed = decided.proposed()
    if not proposed:
        if decided.unfilled:
            state.notes.append(decided.unfilled)
        return Decision(GENERATE, replies)
    state.discovery_calls += decided.discovery
    following, steps, notes = dispatch(
        run, proposed, settings, caps, policies, source="plan", thought=decided.thought
    )
    return Decision(following, [*replies, *steps], notes)


def _observed(run: Run, done: ToolsCallCompleted, settings: HarnessSettings) -> Decision:
    state, envelope = run.state, run.request.envelope()
    steps: list[Event] = []
    sent = state.pending_calls
    for i, result in enumerate(done.results):
        arguments = result.arguments or (sent[i].arguments if i < len(sent) else {})
        state.observations.append(
            Observation(tool=result.tool, arguments=arguments, content=result.content,
                        is_error=result.is_error)
        )  # fmt: skip
        steps.append(
            RunStep(kind="observation", content=result.content, tool=result.tool,
                    arguments=arguments, **envelope)
        )  # fmt: skip
    state.tool_calls += len(done.results)
    state.pending_calls = []
    following = after_calls(run, settings)
    notes = [("budget", {"rule": state.stop_reason})] if state.stop_reason else []
    return Decision(following, steps, notes)


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
