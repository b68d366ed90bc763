"""Thin handlers: a step command in, the router service, a result (or a failure) out.

One handler shape in every service: a `<Service>Handlers` class whose `on_<event>` methods
`app.py` subscribes on the broker. Each decodes (its argument is the typed event), calls the
service, and emits (publishes the result, or a `StepFailed` for a failure the harness should
see): nothing else.
"""

from __future__ import annotations

from typing import Protocol

import structlog
from faststream.kafka import KafkaBroker

from weir_common.bus import Deduper, MemoryDeduper, publish
from weir_common.events import (
    AnswerDelta,
    AnswerEvaluateRequested,
    AnswerGenerateRequested,
    ReactStepDecided,
    ReactStepRequested,
    RouteRequested,
    StepCommand,
    StepFailed,
    ToolInfo,
    ToolsCatalogUpdated,
)
from weir_common.llm import LLMError
from weir_common.topics import Topics
from weir_router.catalog import Catalog
from weir_router.intent import IntentClassifier
from weir_router.judge import AnswerJudge
from weir_router.planner import RulePlanner
from weir_router.route_catalog import CatalogueMatcher
from weir_router.service import AnswerGenerator, decide_route

log = structlog.get_logger(__name__)


class Planner(Protocol):
    """Decides one ReAct step (rule-based offline, or the PRO model)."""

    async def decide(self, cmd: ReactStepRequested, tools: dict[str, ToolInfo]) -> ReactStepDecided:
        """The next tool call, or none."""
        ...


class RouterHandlers:
    """Subscriber callbacks of the router."""

    def __init__(
        self,
        classifier: IntentClassifier,
        generator: AnswerGenerator,
        broker: KafkaBroker,
        topics: Topics,
        *,
        planner: Planner | None = None,
        catalog: Catalog | None = None,
        matcher: CatalogueMatcher | None = None,
        judge: AnswerJudge | None = None,
    ) -> None:
        self._classifier, self._generator = classifier, generator
        self._broker, self._topics = broker, topics
        self._planner = planner or RulePlanner(None)
        self._catalog = catalog or Catalog()
        self._matcher = matcher
        self._judge = judge or AnswerJudge(None)
        # a redelivered command must not pay for a second model call; retries from the
        # harness carry new event ids, so they are never mistaken for duplicates
        self._done: Deduper = MemoryDeduper()

    async def on_route(self, cmd: RouteRequested) -> None:
        """Classify and answer with the route."""
        # the keyword rules first; the tool catalogue when they chose no tool route
        tools = list(self._catalog.tools.values())
        decided = await decide_route(self._classifier, cmd, self._matcher, tools)
        await publish(self._broker, self._topics, decided)

    async def on_catalog(self, event: ToolsCatalogUpdated) -> None:
        """Keep the latest tool catalogue for planning."""
        self._catalog.update(event)

    async def on_react_step(self, cmd: ReactStepRequested) -> None:
        """Plan the next step of a tool loop and report it to the harness."""
        try:
            decided = await self._planner.decide(cmd, self._catalog.tools)
        except LLMError as exc:
            await self._fail(cmd, exc)
            return
        await publish(self._broker, self._topics, decided)

    async def _fail(self, cmd: StepCommand, exc: LLMError) -> None:
        """Tell the harness the step failed (it decides whether to try again)."""
        step = str(getattr(cmd, "type", ""))
        log.warning(
            "step.failed", step=step, run_id=cmd.run_id, transient=exc.transient, error=str(exc)
        )
        failed = StepFailed(
            request_id=cmd.event_id,
            step=step,
            reason=str(exc),
            transient=exc.transient,
            **cmd.envelope(),
        )
        await publish(self._broker, self._topics, failed)

    async def on_generate(self, cmd: AnswerGenerateRequested) -> None:
        """Stream the answer to the requester, then report it to the harness."""
        if await self._done.seen(cmd.event_id):
            log.info("generate.duplicate", run_id=cmd.run_id, event_id=cmd.event_id)
            return

        async def send(seq: int, text: str) -> None:
            attempt = cmd.stream_attempt or cmd.attempt
            delta = AnswerDelta(seq=seq, attempt=attempt, text=text, **cmd.envelope())
            await publish(self._broker, self._topics, delta, topic=cmd.reply_to)

        try:
            result = await self._generator.generate(cmd, send)
        except LLMError as exc:
            await self._fail(cmd, exc)
            return
        await publish(self._broker, self._topics, result)
        await self._done.mark(cmd.event_id)

    async def on_evaluate(self, cmd: AnswerEvaluateRequested) -> None:
        """Judge an answer with the FLASH model and report the verdict to the harness."""
        if await self._done.seen(cmd.event_id):
            log.info("evaluate.duplicate", run_id=cmd.run_id, event_id=cmd.event_id)
            return
        try:
            verdict = await self._judge.evaluate(cmd)
        except LLMError as exc:
            await self._fail(cmd, exc)
            return
        await publish(self._broker, self._topics, verdict)
        await self._done.mark(cmd.event_id)
