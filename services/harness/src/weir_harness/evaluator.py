"""The evaluator (F39, seed 004): check a generated answer against the run's memory and
evidence with the offline rules, then (a model's answer only) ask the FLASH judge as a step
of its own; the transition regenerates on a failure of either. Routes and profiles the
settings skip get neither."""

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
    if offline or not evaluated(run, settings):
        return None
    evidence = [(p.source, p.text) for p in run.state.evidence]
    return first_failure(answer, run.request.text, preference_lines(run), evidence)


def evaluated(run: Run, settings: HarnessSettings) -> bool:
    """Whether the run's route and profile go through the evaluator at all."""
    route = run.state.route.value if run.state.route is not None else "plain_chat"
    return settings.evaluates(route, run.request.profile)


def judged(run: Run, settings: HarnessSettings, *, offline: bool) -> bool:
    """Whether an answer that passed the rules goes to the model judge: only a model's
    answer (the offline responder's router has no model to judge with), where the
    evaluator and its judge are on."""
    return not offline and settings.evaluator_judge and evaluated(run, settings)
