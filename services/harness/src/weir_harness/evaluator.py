"""The evaluator step (F39, seed 004): check a generated answer against the run's memory
and evidence with the offline rules; the transition regenerates on a failure."""

from __future__ import annotations

from weir_harness.evaluator_rules import first_failure
from weir_harness.models import Run
from weir_harness.settings import HarnessSettings


def preference_lines(run: Run) -> list[str]:
    """The stored preferences and long-term facts the answer must not contradict."""
    context = run.state.context
    if context is None:
        return []
    lines = list(context.facts)
    if context.preferences:
        lines += context.preferences.splitlines()
    return lines


def check_answer(
    run: Run, answer: str, settings: HarnessSettings, *, offline: bool = False
) -> str | None:
    """The reason `answer` fails the check, or None (also when the route skips it). The
    offline responder's answer is not checked: it is deterministic (a regeneration would
    repeat it), quotes the question and the memories verbatim, and its verdict is already
    `unverifiable`."""
    if offline:
        return None
    route = run.state.route.value if run.state.route is not None else "plain_chat"
    if not settings.evaluates(route):
        return None
    sources = [p.source for p in run.state.evidence]
    return first_failure(answer, run.request.text, preference_lines(run), sources)
