"""The plain-chat route as data: which command follows which result, and how to build it."""

from __future__ import annotations

from weir_common.events import (
    AnswerGenerateRequested,
    Intent,
    MemoryContext,
    MemoryContextRequested,
    Route,
    RouteRequested,
    StepCommand,
    TurnCompleted,
)
from weir_harness.models import Run

FIRST_STEP = "memory.context.requested"

NEXT_STEP: dict[str, str | None] = {
    "memory.context.ready": "route.requested",
    "route.decided": "answer.generate.requested",
    "answer.generated": "turn.completed",
    "turn.recorded": None,
}
"""After a result of this type, send this command (None: the run is done)."""


def capability_notes(route: Route | None, *, rag: bool, tools: bool) -> list[str]:
    """What the answer must admit it cannot reach (F03), for the chosen route."""
    notes: list[str] = []
    if route is Route.RAG and not rag:
        notes.append(
            "The knowledge base is not connected: no documents were searched for this answer."
        )
    if route in (Route.SINGLE_TOOL, Route.REACT) and not tools:
        notes.append(
            "No tools are connected: no live data can be fetched and no action can be taken."
        )
    return notes


def build_command(run: Run, step: str, attempt: int, *, rag: bool, tools: bool) -> StepCommand:
    """The command for `step` of `run`, from the request and the snapshotted results."""
    req, state = run.request, run.state
    envelope = req.envelope()
    if step == "memory.context.requested":
        return MemoryContextRequested(
            query=req.text, private=req.private, attempt=attempt, **envelope
        )
    if step == "route.requested":
        return RouteRequested(query=req.text, attempt=attempt, **envelope)
    if step == "answer.generate.requested":
        return AnswerGenerateRequested(
            query=req.text,
            reply_to=req.reply_to,
            context=state.context or MemoryContext(),
            intent=state.intent or Intent.CHAT,
            route=state.route or Route.PLAIN_CHAT,
            capability_notes=capability_notes(state.route, rag=rag, tools=tools),
            attempt=attempt,
            **envelope,
        )
    if step == "turn.completed":
        return TurnCompleted(
            user_text=req.text,
            assistant_text=state.answer or "",
            private=req.private,
            attempt=attempt,
            **envelope,
        )
    raise ValueError(f"unknown step {step!r}")
