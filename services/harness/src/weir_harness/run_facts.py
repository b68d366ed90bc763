"""The facts of a run's step log (rows of `run_steps`): what the diagnosis, the verdict and
the timeline of a run record (F41) are read from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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
        for result in calls_of(payload):
            tools = facts.tools_failed if result.get("is_error") else facts.tools_ok
            tools.append(str(result.get("tool")))
    elif kind == "rag.retrieve.completed":
        passages = payload.get("passages") or []
        facts.retrievals += 1
        facts.passages += len(passages)
        for passage in passages:
            if passage.get("source") and passage["source"] not in facts.sources:
                facts.sources.append(str(passage["source"]))


def calls_of(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls of a tool step's payload: a batch (`calls` / `results`), or one call as
    runs recorded before batches were."""
    batch = payload.get("results") or payload.get("calls")
    if isinstance(batch, list):
        return [c for c in batch if isinstance(c, dict)]
    return [payload] if "tool" in payload else []
