"""Run records as ops read them (F41, seed 002): the facts of a run's step log, its timeline,
its diagnosis (how the run went) and its verdict (whether it did what was asked).

Pure functions over a run and its step log (rows of `run_steps`), so each rule is testable on
its own. Hints and evidence are written in weir's own words from structured facts (step
names, tool names, counts, document names): never an engine's or a tool's raw error text,
which stays in the step payloads for ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weir_harness.models import Run, RunStatus
from weir_harness.run_facts import SEVERITY, Facts, Level, Step, facts_of
from weir_harness.timeline import timeline
from weir_harness.verdict import judge

__all__ = ["diagnose", "judge", "timeline"]


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
