"""Diagnosis and verdict rules (F41), one table row per rule, over hand-written step logs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import ChatRequested, Route
from weir_harness.diagnosis import diagnose, judge, timeline
from weir_harness.models import Run, RunState, RunStatus

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MEMORY, ROUTE, RETRIEVE = "memory.context.requested", "route.requested", "rag.retrieve.requested"
PLAN, CALL, GENERATE = "react.step.requested", "tools.call.requested", "answer.generate.requested"
REMEMBER = "turn.completed"


def row(
    kind: str, step: str, payload: dict[str, Any] | None = None, attempt: int = 1
) -> dict[str, Any]:
    return {"kind": kind, "step": step, "attempt": attempt, "payload": payload or {}}


def sent(step: str, attempt: int = 1, **payload: Any) -> dict[str, Any]:
    return row("command", step, {"type": step, **payload}, attempt)


def got(at: str, kind: str, /, **payload: Any) -> dict[str, Any]:
    return row("result", at, {"type": kind, **payload})


def fail(at: str, *, transient: bool = True, **payload: Any) -> dict[str, Any]:
    return got(at, "step.failed", step=at, transient=transient, **payload)


def log(*rows: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows numbered, one second apart."""
    return [
        {**r, "seq": i + 1, "created_at": T0 + timedelta(seconds=i)} for i, r in enumerate(rows)
    ]


ANSWER = got(GENERATE, "answer.generated", model="m", prompt_tokens=9, completion_tokens=3)
PLAIN = [sent(MEMORY), sent(ROUTE), sent(GENERATE), ANSWER, sent(REMEMBER)]
PASSAGE = {"chunk_id": "c1", "document_id": "d1", "source": "guide.pdf", "text": "x"}
RAG = [sent(ROUTE), sent(RETRIEVE), got(RETRIEVE, "rag.retrieve.completed", passages=[PASSAGE]),
       sent(GENERATE), ANSWER]  # fmt: skip
RAG_EMPTY = [sent(ROUTE), sent(RETRIEVE), got(RETRIEVE, "rag.retrieve.completed", passages=[]),
             sent(GENERATE), ANSWER]  # fmt: skip
TOOL_OK = [sent(PLAN), sent(CALL), got(CALL, "tools.call.completed", tool="clock"),
           sent(GENERATE), ANSWER]  # fmt: skip
TOOL_ERR = [sent(PLAN), sent(CALL), got(CALL, "tools.call.completed", tool="clock", is_error=True),
            sent(GENERATE), ANSWER]  # fmt: skip
NO_CALL = [sent(PLAN), got(PLAN, "react.step.decided"), sent(GENERATE), ANSWER]
RETRIED = [sent(MEMORY), fail(MEMORY),
           sent(MEMORY, attempt=2), sent(ROUTE), sent(GENERATE), ANSWER]  # fmt: skip
TIMED_OUT = [sent(MEMORY), row("timeout", MEMORY, {"deadline": "t"}), sent(MEMORY, attempt=2),
             sent(GENERATE), ANSWER]  # fmt: skip
EXHAUSTED = [sent(GENERATE), fail(GENERATE), sent(GENERATE, attempt=2), fail(GENERATE),
             sent(GENERATE, attempt=3), fail(GENERATE)]  # fmt: skip
PERMANENT = [sent(GENERATE), fail(GENERATE, transient=False)]
BUDGET = [*TOOL_OK[:3], row("budget", CALL, {"rule": "the tool-call budget (1) is used up"}),
          sent(GENERATE), ANSWER]  # fmt: skip
REFUSED = [*TOOL_OK[:3], sent(PLAN), row("budget", "", {"rule": "repeated_call", "tool": "clock",
           "arguments": {}}), sent(GENERATE), ANSWER]  # fmt: skip
TRIMMED = [row("budget", GENERATE, {"trimmed": ["evidence: kept the top 3 of 9"]}), *PLAIN]
RESENT = [sent(MEMORY), row("resend", MEMORY, {"why": "the harness was down"}), sent(MEMORY),
          sent(GENERATE), ANSWER]  # fmt: skip
STORE_FAILED = [*PLAIN, fail(REMEMBER)]


def run_of(
    status: RunStatus = RunStatus.COMPLETED,
    route: Route = Route.PLAIN_CHAT,
    answer: str | None = "the answer",
    **state: Any,
) -> Run:
    request = ChatRequested(text="q", reply_to="r", run_id="r1", conversation_id="c1")
    step = state.pop("step", None)
    attempt = state.pop("attempt", 1)
    return Run(
        run_id="r1", conversation_id="c1", user_id="u1", status=status, request=request,
        state=RunState(route=route, answer=answer, model="m", **state), step=step,
        attempt=attempt,
    )  # fmt: skip


DIAGNOSES = [
    # (name, run, steps, level, a word every hint set must contain)
    ("normal plain chat", run_of(), PLAIN, "normal", None),
    ("a retried step warns", run_of(), RETRIED, "warning", "retried (attempt 2)"),
    ("a timed-out step warns", run_of(), TIMED_OUT, "warning", "before its deadline"),
    ("a tool error warns", run_of(route=Route.REACT), TOOL_ERR, "warning", "tool clock returned"),
    ("a restart re-send warns", run_of(), RESENT, "warning", "harness restart"),
    ("a trimmed command warns", run_of(), TRIMMED, "warning", "trimmed to fit"),
    ("offline answer warns", run_of(offline=True), PLAIN, "warning", "offline responder"),
    ("a refused repeat is blocked", run_of(route=Route.REACT), REFUSED, "blocked", "refused"),
    (
        "a loop budget is exhausted",
        run_of(route=Route.REACT, stop_reason="the tool-call budget (1) is used up"),
        BUDGET,
        "budget_exhausted",
        "stopped early",
    ),
    (
        "a failed run is an error",
        run_of(RunStatus.FAILED, answer=None, step=GENERATE, attempt=3),
        EXHAUSTED,
        "error",
        "failed after 3 attempt(s)",
    ),
    (
        "a permanent failure is an error",
        run_of(RunStatus.FAILED, answer=None, step=GENERATE),
        PERMANENT,
        "error",
        "retry would not help",
    ),
]


@pytest.mark.parametrize(
    ("run", "steps", "level", "hint"),
    [pytest.param(*case[1:], id=case[0]) for case in DIAGNOSES],
)
def test_diagnosis_rule(
    run: Run, steps: list[dict[str, Any]], level: str, hint: str | None
) -> None:
    found = diagnose(run, log(*steps))
    assert found["level"] == level
    if hint is None:
        assert found["hints"] == []
    else:
        assert any(hint in h for h in found["hints"]), found["hints"]


VERDICTS = [
    # (name, run, steps, verdict, a word the evidence must contain)
    ("plain chat is completed", run_of(), PLAIN, "completed", "answer generated by m"),
    ("sources back the answer", run_of(route=Route.RAG), RAG, "completed", "from guide.pdf"),
    ("a tool result backs it", run_of(route=Route.REACT), TOOL_OK, "completed", "clock"),
    (
        "no answer is failed",
        run_of(RunStatus.FAILED, answer=None, step=GENERATE, attempt=3),
        EXHAUSTED,
        "failed",
        "no answer was given",
    ),
    (
        "a permanent failure needs a human",
        run_of(RunStatus.FAILED, answer=None, step=GENERATE),
        PERMANENT,
        "needs_human",
        "a retry will not fix it",
    ),
    (
        "answered but not stored is partial",
        run_of(RunStatus.FAILED, step=REMEMBER, attempt=3),
        STORE_FAILED,
        "partial",
        "turn.completed failed",
    ),
    (
        "a budget cut is partial",
        run_of(route=Route.REACT, stop_reason="the tool-call budget (1) is used up"),
        BUDGET,
        "partial",
        "cut short",
    ),
    ("a tool error is partial", run_of(route=Route.REACT), TOOL_ERR, "partial", "returned an err"),
    ("missing knowledge base is partial", run_of(route=Route.RAG), PLAIN, "partial", "no knowl"),
    ("missing tools is partial", run_of(route=Route.SINGLE_TOOL), PLAIN, "partial", "no tools"),
    ("nothing found is unverifiable", run_of(route=Route.RAG), RAG_EMPTY, "unverifiable", "nothi"),
    ("offline is unverifiable", run_of(offline=True), PLAIN, "unverifiable", "offline"),
    ("no tool result is unverifiable", run_of(route=Route.REACT), NO_CALL, "unverifiable", "with"),
    ("no answer text is unverifiable", run_of(answer=None), PLAIN, "unverifiable", "without an"),
]


@pytest.mark.parametrize(
    ("run", "steps", "verdict", "evidence"),
    [pytest.param(*case[1:], id=case[0]) for case in VERDICTS],
)
def test_verdict_rule(run: Run, steps: list[dict[str, Any]], verdict: str, evidence: str) -> None:
    found = judge(run, log(*steps))
    assert found["verdict"] == verdict
    assert any(evidence in e for e in found["evidence"]), found["evidence"]


def test_timeline_has_durations_tokens_sources_and_no_raw_error_text() -> None:
    steps = log(
        sent(ROUTE),
        got(ROUTE, "route.decided", route="rag", intent="knowledge", rule="kb"),
        sent(RETRIEVE),
        got(RETRIEVE, "rag.retrieve.completed", passages=[PASSAGE]),
        sent(GENERATE),
        fail(GENERATE, reason="host db-7 said no"),
        sent(GENERATE, attempt=2),
        ANSWER,
        row("result", REMEMBER, {"pruned": True}),
    )
    events = timeline(steps)
    assert [e["seq"] for e in events] == list(range(1, 10))
    assert events[1]["detail"] == {"route": "rag", "intent": "knowledge", "rule": "kb"}
    assert events[1]["duration_ms"] == 1000.0
    assert events[3]["detail"] == {"passages": 1, "sources": ["guide.pdf"], "chunk_ids": ["c1"]}
    assert events[5]["detail"] == {"step": GENERATE, "transient": True}
    assert "db-7" not in str(events)
    assert events[7]["detail"]["prompt_tokens"] == 9
    assert events[7]["duration_ms"] == 1000.0  # after the second attempt's command
    assert events[8]["detail"] == {"pruned": True}
    assert events[0]["duration_ms"] is None
