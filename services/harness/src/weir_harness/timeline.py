"""The timeline of a run record (F41): its step log as ops read it, each entry with a few
structured fields of its outcome and, for a result, how long after its command it came."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from weir_harness.run_facts import Step, calls_of


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


EVALUATOR_KINDS = ("evaluator.failed", "evaluator.unjudged")
_DETAILS: dict[str, tuple[str, ...]] = {
    "route.decided": ("route", "intent", "rule"),
    "react.step.decided": ("tool",),
    "answer.generated": ("model", "offline", "prompt_tokens", "completion_tokens"),
    "answer.evaluated": ("passed", "reason", "note", "model"),
    "step.failed": ("step", "transient"),
}


def _detail(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    if payload.get("pruned") or payload.get("scrubbed"):
        return {k: True for k in ("pruned", "scrubbed") if payload.get(k)}
    if kind in ("budget", "timeout", "resend", "confirmation", *EVALUATOR_KINDS):
        return {k: v for k, v in payload.items() if k != "arguments"}
    kind_of = str(payload.get("type"))
    if kind_of in ("tools.call.requested", "tools.call.completed"):
        calls = [{k: c[k] for k in ("tool", "is_error", "duration_ms") if k in c}
                 for c in calls_of(payload)]  # fmt: skip
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
