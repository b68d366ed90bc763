"""The evaluator's model judge (F39, seed 004): the FLASH model checks an answer against a
short rubric and replies with a small JSON verdict.

The judge never blocks an answer: an unparsable reply, a permanent model error or a router
without a model pass it, with a note saying why. A transient model error is raised, so the
harness retries the step as it retries every step (and passes the answer when the retries
run out).
"""

from __future__ import annotations

import json
import re

import structlog

from weir_common.events import AnswerEvaluated, AnswerEvaluateRequested
from weir_common.llm import LLMClient, LLMError
from weir_router.judge_prompt import judge_messages

log = structlog.get_logger(__name__)

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_verdict(reply: str) -> tuple[bool, str] | None:
    """`(passed, reason)` from the judge's reply (its first JSON object), or None when the
    reply holds no verdict: no object, invalid JSON, or no boolean `pass`."""
    match = _OBJECT.search(reply)
    if match is None:
        return None
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("pass"), bool):
        return None
    reason = value.get("reason")
    return value["pass"], str(reason).strip() if reason is not None else ""


class AnswerJudge:
    """Judges answers with the FLASH profile; None: no model (every answer passes)."""

    def __init__(self, llm: LLMClient | None) -> None:
        self._llm = llm

    async def evaluate(self, cmd: AnswerEvaluateRequested) -> AnswerEvaluated:
        """The verdict on `cmd.answer`; raises a transient `LLMError` for the harness to retry."""
        if self._llm is None:
            return self._unjudged(cmd, "no model is configured for the judge")
        try:
            completion = await self._llm.complete(judge_messages(cmd), profile="flash")
        except LLMError as exc:
            if exc.transient:
                raise
            return self._unjudged(cmd, f"the judge failed: {exc.message}")
        verdict = parse_verdict(completion.text)
        if verdict is None:
            log.info("judge.unparsable", run_id=cmd.run_id, reply=completion.text[:200])
            return self._unjudged(cmd, "the judge's reply was not a verdict", completion.model)
        passed, reason = verdict
        if not passed and not reason:
            reason = "the judge rejected the answer without saying why"
        log.info("judge.verdict", run_id=cmd.run_id, passed=passed, reason=reason[:200])
        return AnswerEvaluated(
            request_id=cmd.event_id,
            passed=passed,
            reason=reason,
            model=completion.model,
            **cmd.envelope(),
        )

    @staticmethod
    def _unjudged(
        cmd: AnswerEvaluateRequested, note: str, model: str | None = None
    ) -> AnswerEvaluated:
        log.info("judge.unjudged", run_id=cmd.run_id, note=note)
        return AnswerEvaluated(
            request_id=cmd.event_id, passed=True, note=note, model=model, **cmd.envelope()
        )
