"""The evaluator's model judge (F39, seed 004): the harness asks the router to judge an
answer that passed the offline rules; a failed judgement regenerates like a failed rule."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weir_common.events.base import StepCommand, StepResult
from weir_common.events.parts import Observation, Passage
from weir_common.events.steps import MemoryContext


class AnswerEvaluateRequested(StepCommand):
    """Harness → router: judge a generated answer with the FLASH model and a short rubric
    (answers the question; consistent with the memories, preferences and evidence given; in
    the user's language). Sent only for answers a model wrote, on routes and profiles the
    evaluator does not skip."""

    type: Literal["answer.evaluate.requested"] = "answer.evaluate.requested"
    query: str = Field(description="The user's message.")
    answer: str = Field(description="The answer to judge, as the user saw it.")
    context: MemoryContext = Field(
        default_factory=MemoryContext, description="What memory gave the answer's model."
    )
    evidence: list[Passage] = Field(
        default_factory=list, description="The passages the answer was given with."
    )
    observations: list[Observation] = Field(
        default_factory=list, description="What the tools returned in this run."
    )


class AnswerEvaluated(StepResult):
    """Router → harness: the judge's verdict. A judge that could not judge (an unparsable
    reply, a permanent model error, no model) passes the answer and says why in `note`:
    the judge never blocks an answer."""

    type: Literal["answer.evaluated"] = "answer.evaluated"
    passed: bool
    reason: str = Field(
        default="",
        description="Why the answer failed (the regeneration's revision note), or why it "
        "passed, in the judge's words.",
        examples=["the answer recommends coffee, which the user said they dislike"],
    )
    note: str | None = Field(
        default=None,
        description="Set when the answer passed without a judgement, and why.",
        examples=["the judge's reply was not a verdict"],
    )
    model: str | None = Field(default=None, description="The judge's model.")
