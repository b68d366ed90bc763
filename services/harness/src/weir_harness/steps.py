"""The routes as data: which command follows which result, and how each command is built.

plain chat: memory → route → generate → (evaluate) → remember
RAG:        memory → route → retrieve → generate → (evaluate) → remember
tools:      memory → route → (plan → call tool)… → generate → (evaluate) → remember
The evaluate step (the model judge, F39) follows a model's answer that passed the offline
rules (weir_harness.evaluator); a failed check goes back to generate.
A route whose capability is missing goes straight to generation, whose context says so.
The route reads only the message, so it is asked together with the memory context
(`route_with_memory`): the run waits for both, in whichever order they answer.
"""

from __future__ import annotations

from collections.abc import Callable

from weir_common.events import (
    AnswerEvaluateRequested,
    AnswerGenerateRequested,
    Intent,
    MemoryContext,
    MemoryContextRequested,
    RagRetrieveRequested,
    ReactStepRequested,
    Route,
    RouteRequested,
    StepCommand,
    ToolCallItem,
    ToolsCallRequested,
    TurnCompleted,
)
from weir_harness.capabilities import Capabilities
from weir_harness.models import Run
from weir_harness.settings import HarnessSettings

FIRST_STEP = "memory.context.requested"
ROUTE = "route.requested"
GENERATE = "answer.generate.requested"
EVALUATE = "answer.evaluate.requested"
PLAN = "react.step.requested"
CALL = "tools.call.requested"
RETRIEVE = "rag.retrieve.requested"
LOOP_STEPS = (PLAN, CALL)


def after_route(run: Run, caps: Capabilities) -> str:
    """The step after the route is known."""
    route = run.state.route
    if route is Route.RAG and caps.rag:
        return RETRIEVE
    if route in (Route.SINGLE_TOOL, Route.REACT) and caps.has_tools:
        return PLAN
    return GENERATE


def after_observation(run: Run, settings: HarnessSettings) -> str:
    """After a tool result (or a refused call): plan again, or answer."""
    state = run.state
    if run.state.route is Route.SINGLE_TOOL and state.tool_calls > state.discovery_calls:
        return GENERATE
    if state.tool_calls >= settings.agent_max_tool_calls:
        state.stop_reason = f"the tool-call budget ({settings.agent_max_tool_calls}) is used up"
        return GENERATE
    if state.model_turns >= settings.agent_max_model_turns - 1:  # keep one for the answer
        state.stop_reason = f"the model-turn budget ({settings.agent_max_model_turns}) is used up"
        return GENERATE
    return PLAN


Builder = Callable[[Run, Capabilities, HarnessSettings], StepCommand]


def _memory(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req = run.request
    return MemoryContextRequested(query=req.text, private=req.private, **req.envelope())


def _route(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    return RouteRequested(query=run.request.text, **run.request.envelope())


def _retrieve(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req = run.request
    return RagRetrieveRequested(query=req.text, top_k=settings.rag_top_k, **req.envelope())


def _plan(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req, state = run.request, run.state
    return ReactStepRequested(
        query=req.text,
        context=state.context or MemoryContext(),
        observations=state.observations,
        model_turns_left=max(settings.agent_max_model_turns - state.model_turns - 1, 0),
        tool_calls_left=tool_calls_left(run, settings),
        **req.envelope(),
    )


def _call(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    state = run.state
    if not state.pending_calls:
        raise ValueError("no planned tool call to send")
    # numbered by the calls made before: a retried batch carries the same keys, so the
    # tools service replays what already ran instead of running it again
    calls = [
        ToolCallItem(tool=call.tool, arguments=call.arguments,
                     idempotency_key=f"{run.run_id}:{state.tool_calls + i}")
        for i, call in enumerate(state.pending_calls)
    ]  # fmt: skip
    return ToolsCallRequested(
        calls=calls, timeout_s=settings.tool_timeout_s, **run.request.envelope()
    )


def _generate(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req, state = run.request, run.state
    notes = caps.status(state.route)
    notes += state.notes
    if state.stop_reason:
        notes.append(f"The tool loop stopped early: {state.stop_reason}.")
    return AnswerGenerateRequested(
        query=req.text,
        reply_to=req.reply_to,
        context=state.context or MemoryContext(),
        intent=state.intent or Intent.CHAT,
        route=state.route or Route.PLAIN_CHAT,
        capability_notes=notes,
        evidence=state.evidence,
        observations=state.observations,
        tool_calls_left=answer_tool_calls(run, caps, settings),
        stream_attempt=state.generations,
        revision_note=state.revision_note,
        **req.envelope(),
    )


def _evaluate(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req, state = run.request, run.state
    if state.candidate is None:
        raise ValueError("no answer to evaluate")
    return AnswerEvaluateRequested(
        query=req.text,
        answer=state.candidate.text,
        context=state.context or MemoryContext(),
        evidence=state.evidence,
        observations=state.observations,
        **req.envelope(),
    )


def _remember(run: Run, caps: Capabilities, settings: HarnessSettings) -> StepCommand:
    req = run.request
    return TurnCompleted(
        user_text=req.text,
        assistant_text=run.state.answer or "",
        private=req.private,
        client_conversation_id=req.client_conversation_id,
        reply_to=req.reply_to,
        sources=run.state.evidence,
        observations=run.state.observations,
        route=run.state.route,
        # when the turn happened, not when it finished: memory drops a turn that happened
        # before its user was forgotten ("forget me" tombstone)
        occurred_at=req.occurred_at,
        **req.envelope(),
    )


BUILDERS: dict[str, Builder] = {
    FIRST_STEP: _memory,
    ROUTE: _route,
    RETRIEVE: _retrieve,
    PLAN: _plan,
    CALL: _call,
    GENERATE: _generate,
    EVALUATE: _evaluate,
    "turn.completed": _remember,
}


def build_command(
    run: Run, step: str, attempt: int, caps: Capabilities, settings: HarnessSettings
) -> StepCommand:
    """The command for `step` of `run`, from the request and the snapshotted results."""
    builder = BUILDERS.get(step)
    if builder is None:
        raise ValueError(f"unknown step {step!r}")
    return builder(run, caps, settings).model_copy(update={"attempt": attempt})


def answer_tool_calls(run: Run, caps: Capabilities, settings: HarnessSettings) -> int:
    """How many calls the model may ask for on the answer step: none without tools, or when
    this answer is the last model turn the budget allows."""
    turns_left = settings.agent_max_model_turns - run.state.model_turns
    if not caps.has_tools or turns_left < 1:
        return 0
    return tool_calls_left(run, settings)


def tool_calls_left(run: Run, settings: HarnessSettings) -> int:
    """Tool calls the run may still make (one on a single-tool route, after discovery)."""
    state = run.state
    single = min(1 + state.discovery_calls, settings.agent_max_tool_calls)
    allowed = single if state.route is Route.SINGLE_TOOL else settings.agent_max_tool_calls
    return max(allowed - state.tool_calls, 0)
