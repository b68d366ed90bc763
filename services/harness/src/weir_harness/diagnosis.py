"""Run records as ops read them (F41, seed 002): the facts of a run's step log, its timeline,
its diagnosis (how the run went) and its verdict (whether it did what was asked).

Pure functions over a run and its step log (rows of `run_steps`), so each rule is testable on
its own. Hints and evidence are written in weir's own words from structured facts (step
names, tool names, counts, document names): never an engine's or a tool's raw error text,
which stays in the step payloads for ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from weir_common.events import Route
from weir_harness.models import Run, RunStatus
from weir_harness.steps import GENERATE, PLAN, RETRIEVE

Level = Literal["normal", "warning", "error", "blocked", "budget_exhausted"]
Verdict = Literal["completed", "partial", "failed", "unverifiable", "needs_human"]

#: from least to most severe: a run's level is the most severe level one of its rules gave
SEVERITY: tuple[Level, ...] = ("normal", "warning", "blocked", "budget_exhausted", "error")
Step = dict[str, Any]


@dataclass
class Facts:
    """What a run's step log says happened."""

    retries: list[tuple[str, int]] = field(default_factory=list)  # (step, attempt) re-sent
    timeouts: list[str] = field(default_factory=list)  # steps whose deadline passed
    failures: list[tuple[str, bool]] = field(default_factory=list)  # (step, transient)
    resends: list[str] = field(default_factory=list)  # re-sent after a harness restart
    tools_ok: list[str] = field(default_factory=list)
    tools_failed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # repeated calls refused by the guard
    budget_rules: list[str] = field(default_factory=list)  # loop budgets that stopped it
    trimmed: list[str] = field(default_factory=list)  # size budget notes
    retrievals: int = 0
    passages: int = 0
    sources: list[str] = field(default_factory=list)
    steps_sent: set[str] = field(default_factory=set)
    confirmations: list[tuple[str, str]] = field(default_factory=list)  # (decision, tool)


def facts_of(steps: Sequence[Step]) -> Facts:
    """The facts of a step log (a pruned payload gives no facts of its own)."""
    facts = Facts()
    for row in steps:
        kind, step, payload = row["kind"], row["step"], row.get("payload") or {}
        if kind == "command":
            facts.steps_sent.add(step)
            if int(row.get("attempt") or 1) > 1:
                facts.retries.append((step, int(row["attempt"])))
        elif kind == "timeout":
            facts.timeouts.append(step)
        elif kind == "resend":
            facts.resends.append(step)
        elif kind == "budget":
            _budget(facts, payload)
        elif kind == "confirmation" and payload.get("decision"):
            facts.confirmations.append((str(payload["decision"]), str(payload.get("tool"))))
        elif kind == "result":
            _result(facts, step, payload)
    return facts


def _budget(facts: Facts, payload: dict[str, Any]) -> None:
    if payload.get("trimmed"):
        facts.trimmed.extend(str(t) for t in payload["trimmed"])
    rule = payload.get("rule")
    if rule == "repeated_call":
        facts.refused.append(str(payload.get("tool") or "a tool"))
    elif rule:
        facts.budget_rules.append(str(rule))


def _result(facts: Facts, step: str, payload: dict[str, Any]) -> None:
    kind = payload.get("type")
    if kind == "step.failed":
        facts.failures.append((str(payload.get("step") or step), bool(payload.get("transient"))))
    elif kind == "tools.call.completed":
        for result in _calls_of(payload):
            tools = facts.tools_failed if result.get("is_error") else facts.tools_ok
            tools.append(str(result.get("tool")))
    elif kind == "rag.retrieve.completed":
        passages = payload.get("passages") or []
        facts.retrievals += 1
        facts.passages += len(passages)
        for passage in passages:
            if passage.get("source") and passage["source"] not in facts.sources:
                facts.sources.append(str(passage["source"]))


def diagnose(run: Run, steps: Sequence[Step]) -> dict[str, Any]:
    """`{"level": ..., "hints": [...]}`: how the run went, by rule (most severe level wins)."""
    facts = facts_of(steps)
    found: list[tuple[Level, str]] = []
    for rule in DIAGNOSIS_RULES:
        found.extend(rule(run, facts))
    level: Level = "normal"
    for each, _ in found:
        if SEVERITY.index(each) > SEVERITY.index(level):
            level = each
    return {"level": level, "hints": [hint for _, hint in found]}


def _run_failed(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    if run.status is not RunStatus.FAILED:
        return []
    permanent = [s for s, transient in facts.failures if not transient]
    if permanent:
        return [("error", f"{permanent[-1]} failed and said a retry would not help")]
    step = run.step or (facts.failures[-1][0] if facts.failures else "a step")
    return [("error", f"{step} failed after {run.attempt} attempt(s); the run failed")]


def _budgets(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    if not facts.budget_rules and not run.state.stop_reason:
        return []
    why = run.state.stop_reason or ", ".join(facts.budget_rules)
    return [("budget_exhausted", f"the tool loop stopped early: {why}")]


def _refused(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [
        ("blocked", f"a repeated call of {tool} with the same arguments was refused")
        for tool in dict.fromkeys(facts.refused)
    ]


_CONFIRMATION_HINTS = {
    "denied": "the user declined the call of {tool}; it was not run",
    "expired": "the call of {tool} waited for the user's confirmation until it expired",
    "policy_denied": "the user's settings deny {tool}; it was not called",
    "superseded": "the user sent a new message instead of confirming {tool}; it was not run",
}


def _unconfirmed(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [
        ("blocked", _CONFIRMATION_HINTS[decision].format(tool=tool))
        for decision, tool in facts.confirmations
        if decision in _CONFIRMATION_HINTS
    ]


def _retried(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [("warning", f"{step} was retried (attempt {n})") for step, n in facts.retries]


def _timed_out(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [("warning", f"no answer to {step} before its deadline") for step in facts.timeouts]


def _transient(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [
        ("warning", f"{step} failed transiently (retried automatically)")
        for step, transient in facts.failures
        if transient
    ]


def _tool_errors(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [("warning", f"tool {tool} returned an error") for tool in facts.tools_failed]


def _restarted(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [("warning", f"{step} was re-sent after a harness restart") for step in facts.resends]


def _trimmed(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    return [("warning", f"a command was trimmed to fit: {note}") for note in facts.trimmed]


def _offline(run: Run, facts: Facts) -> list[tuple[Level, str]]:
    if not run.state.offline:
        return []
    return [("warning", "answered by the offline responder: no model is configured")]


DIAGNOSIS_RULES = (
    _run_failed,
    _budgets,
    _refused,
    _unconfirmed,
    _retried,
    _timed_out,
    _transient,
    _tool_errors,
    _restarted,
    _trimmed,
    _offline,
)


def judge(run: Run, steps: Sequence[Step]) -> dict[str, Any]:
    """`{"verdict": ..., "evidence": [...]}`: whether the run did what was asked (seed 002's
    acceptance layer), by the first rule that applies."""
    facts = facts_of(steps)
    for rule in VERDICT_RULES:
        found = rule(run, facts)
        if found is not None:
            return {"verdict": found[0], "evidence": found[1]}
    raise AssertionError("the last verdict rule always applies")  # pragma: no cover


Judged = tuple[Verdict, list[str]] | None


def _permanent_failure(run: Run, facts: Facts) -> Judged:
    if run.status is not RunStatus.FAILED or run.state.answer:
        return None
    permanent = [s for s, transient in facts.failures if not transient]
    if not permanent:
        return None
    return "needs_human", [f"{permanent[-1]} failed permanently: a retry will not fix it"]


def _confirmation_expired(run: Run, facts: Facts) -> Judged:
    """A side effect waited for the user, who never answered: someone has to decide."""
    expired = [tool for decision, tool in facts.confirmations if decision == "expired"]
    if not expired:
        return None
    return "needs_human", [
        f"the call of {tool} needed the user's confirmation and none came in time; it was not run"
        for tool in expired
    ]


def _failed(run: Run, facts: Facts) -> Judged:
    if run.status is not RunStatus.FAILED or run.state.answer:
        return None
    step = run.step or "a step"
    return "failed", [f"{step} failed after {run.attempt} attempt(s); no answer was given"]


def _answered_but_broken(run: Run, facts: Facts) -> Judged:
    """Answered, but part of the work is missing: the turn was not stored, the loop was cut
    by a budget, a tool failed, or the route's capability was not there."""
    if not run.state.answer:
        return None
    evidence: list[str] = []
    if run.status is RunStatus.FAILED:
        evidence.append(f"the answer was given but {run.step or 'a later step'} failed")
    if run.state.stop_reason:
        evidence.append(f"the tool loop was cut short: {run.state.stop_reason}")
    evidence.extend(f"tool {tool} returned an error" for tool in facts.tools_failed)
    route = run.state.route
    if route is Route.RAG and RETRIEVE not in facts.steps_sent:
        evidence.append("the knowledge route was chosen but no knowledge base was searched")
    if route in (Route.SINGLE_TOOL, Route.REACT) and PLAN not in facts.steps_sent:
        evidence.append("a tool route was chosen but no tools were available")
    if not evidence:
        return None
    if facts.tools_ok:
        evidence.append(f"tool results backing it: {', '.join(facts.tools_ok)}")
    return "partial", evidence


def _no_evidence(run: Run, facts: Facts) -> Judged:
    """Answered where evidence was expected, with none: nothing can confirm the answer."""
    if not run.state.answer:
        return None
    if run.state.offline:
        return "unverifiable", ["answered by the offline responder, not by a model"]
    route = run.state.route
    if route is Route.RAG and facts.passages == 0:
        return "unverifiable", ["the knowledge base was searched and nothing was found"]
    if route in (Route.SINGLE_TOOL, Route.REACT) and not facts.tools_ok:
        return "unverifiable", ["a tool route answered without any tool result"]
    return None


def _completed(run: Run, facts: Facts) -> Judged:
    if not run.state.answer:
        return None
    evidence: list[str] = []
    if facts.passages:
        names = ", ".join(facts.sources)
        evidence.append(f"{facts.passages} passage(s) retrieved from {names}")
    if facts.tools_ok:
        evidence.append(f"tool results: {', '.join(facts.tools_ok)}")
    if GENERATE in facts.steps_sent and run.state.model:
        evidence.append(f"answer generated by {run.state.model}")
    if not evidence:
        evidence.append("answered (plain chat: no sources expected)")
    return "completed", evidence


def _nothing(run: Run, facts: Facts) -> Judged:
    """Completed without any answer text: nothing to show the user's goal was met."""
    return "unverifiable", ["the run ended without an answer"]


VERDICT_RULES = (
    _permanent_failure,
    _confirmation_expired,
    _failed,
    _answered_but_broken,
    _no_evidence,
    _completed,
    _nothing,
)


def timeline(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """The run's events in order: what each step was, its outcome in a few structured
    fields, when it happened and, for a result, how long after its command it came."""
    sent_at: dict[str, datetime] = {}
    events: list[dict[str, Any]] = []
    for row in steps:
        at: datetime = row["created_at"]
        payload = row.get("payload") or {}
        kind, step = row["kind"], row["step"]
        duration = None
        if kind == "command":
            sent_at[step] = at
        elif kind in ("result", "timeout") and step in sent_at:
            duration = round((at - sent_at[step]).total_seconds() * 1000, 1)
        events.append(
            {
                "seq": row["seq"],
                "at": at.isoformat(),
                "step": step,
                "kind": kind,
                "attempt": row["attempt"],
                "event": payload.get("type") or kind,
                "detail": _detail(kind, payload),
                "duration_ms": duration,
            }
        )
    return events


_DETAILS: dict[str, tuple[str, ...]] = {
    "route.decided": ("route", "intent", "rule"),
    "react.step.decided": ("tool",),
    "answer.generated": ("model", "offline", "prompt_tokens", "completion_tokens"),
    "step.failed": ("step", "transient"),
}


def _detail(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    if payload.get("pruned") or payload.get("scrubbed"):
        return {k: True for k in ("pruned", "scrubbed") if payload.get(k)}
    if kind in ("budget", "timeout", "resend", "confirmation"):
        return {k: v for k, v in payload.items() if k != "arguments"}
    kind_of = str(payload.get("type"))
    if kind_of in ("tools.call.requested", "tools.call.completed"):
        calls = [{k: c[k] for k in ("tool", "is_error", "duration_ms") if k in c}
                 for c in _calls_of(payload)]  # fmt: skip
        detail: dict[str, Any] = {"tool": ", ".join(str(c.get("tool")) for c in calls)}
        if kind_of == "tools.call.completed":
            detail["is_error"] = any(c.get("is_error") for c in calls)
            detail["duration_ms"] = max((c.get("duration_ms") or 0.0 for c in calls), default=0.0)
        return {**detail, "calls": calls}
    if kind_of == "rag.retrieve.completed":
        passages = payload.get("passages") or []
        return {
            "passages": len(passages),
            "sources": list(dict.fromkeys(str(p.get("source")) for p in passages)),
            "chunk_ids": [str(p.get("chunk_id")) for p in passages],
        }
    return {k: payload[k] for k in _DETAILS.get(kind_of, ()) if k in payload}


def _calls_of(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls of a tool step's payload: a batch (`calls` / `results`), or one call as
    runs recorded before batches were."""
    batch = payload.get("results") or payload.get("calls")
    if isinstance(batch, list):
        return [c for c in batch if isinstance(c, dict)]
    return [payload] if "tool" in payload else []
