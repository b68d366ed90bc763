"""Router handlers on the in-memory broker: results out, duplicates skipped, failures reported."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import command_subscriber_options, make_broker, publish, subscriber_options
from weir_common.events import (
    AnswerDelta,
    AnswerEvaluated,
    AnswerEvaluateRequested,
    AnswerGenerated,
    AnswerGenerateRequested,
    RouteDecided,
    RouteRequested,
    StepFailed,
)
from weir_common.llm import ChatMessage, LLMError, ProfileName, StreamItem, ToolSpec
from weir_common.topics import Topics
from weir_router.handlers import RouterHandlers
from weir_router.intent import IntentClassifier
from weir_router.judge import AnswerJudge
from weir_router.service import AnswerGenerator
from weir_router.settings import RouterSettings

pytestmark = pytest.mark.unit

TOPICS = Topics(prefix="routertest.")
REPLIES = TOPICS.reply("test")


class DownModel:
    """A model client whose provider is down (a real LLMError, as litellm would map it)."""

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        profile: ProfileName = "pro",
        tools: Sequence[ToolSpec] | None = None,
    ) -> AsyncIterator[StreamItem]:
        raise LLMError(True, "provider unavailable (503)")
        yield  # pragma: no cover - makes this an async generator

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMError(True, "provider unavailable (503)")


def _wire(
    generator: AnswerGenerator, judge: AnswerJudge | None = None
) -> tuple[KafkaBroker, list[Any]]:
    broker = make_broker("127.0.0.1:1", "router", TracerProvider())
    handlers = RouterHandlers(IntentClassifier(), generator, broker, TOPICS, judge=judge)
    broker.subscriber(TOPICS.of("route.requested"), **command_subscriber_options("r", 1))(
        handlers.on_route
    )
    broker.subscriber(TOPICS.of("answer.generate.requested"), **command_subscriber_options("g", 1))(
        handlers.on_generate
    )
    broker.subscriber(TOPICS.of("answer.evaluate.requested"), **command_subscriber_options("e", 1))(
        handlers.on_evaluate
    )
    seen: list[Any] = []

    async def results(
        event: RouteDecided | AnswerGenerated | AnswerEvaluated | StepFailed,
    ) -> None:
        seen.append(event)

    async def replies(event: AnswerDelta) -> None:
        seen.append(event)

    for t in ("route.decided", "answer.generated", "answer.evaluated", "step.failed"):
        broker.subscriber(TOPICS.of(t), **subscriber_options("h"))(results)
    broker.subscriber(REPLIES, **subscriber_options("gw"))(replies)
    return broker, seen


async def test_route_and_offline_answer_flow_out() -> None:
    broker, seen = _wire(AnswerGenerator(None, RouterSettings()))
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, RouteRequested(query="你好", run_id="r1"))
        await publish(
            br, TOPICS, AnswerGenerateRequested(query="你好", reply_to=REPLIES, run_id="r1")
        )
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "RouteDecided"
    assert "AnswerDelta" in kinds
    assert kinds[-1] == "AnswerGenerated"
    assert seen[-1].offline is True


async def test_a_redelivered_command_is_answered_once() -> None:
    broker, seen = _wire(AnswerGenerator(None, RouterSettings()))
    cmd = AnswerGenerateRequested(query="hello", reply_to=REPLIES, run_id="r1")
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, cmd)
        await publish(br, TOPICS, cmd)
    assert sum(isinstance(e, AnswerGenerated) for e in seen) == 1


async def test_a_model_failure_becomes_a_transient_step_failure() -> None:
    broker, seen = _wire(AnswerGenerator(DownModel(), RouterSettings()))
    cmd = AnswerGenerateRequested(query="hello", reply_to=REPLIES, run_id="r1")
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, cmd)
    [failed] = seen
    assert isinstance(failed, StepFailed)
    assert (failed.request_id, failed.transient, failed.step) == (
        cmd.event_id,
        True,
        "answer.generate.requested",
    )
    assert "503" in failed.reason


async def test_the_judge_step_answers_once_and_reports_a_transient_failure() -> None:
    broker, seen = _wire(AnswerGenerator(None, RouterSettings()))
    cmd = AnswerEvaluateRequested(query="hello", answer="Hi!", run_id="r1")
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, cmd)
        await publish(br, TOPICS, cmd)  # redelivered: judged once
    [verdict] = seen
    assert isinstance(verdict, AnswerEvaluated)
    assert (verdict.request_id, verdict.passed) == (cmd.event_id, True)
    assert verdict.note == "no model is configured for the judge"

    broker, seen = _wire(AnswerGenerator(None, RouterSettings()), AnswerJudge(DownModel()))
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, cmd)
    [failed] = seen
    assert isinstance(failed, StepFailed)
    assert (failed.step, failed.transient) == ("answer.evaluate.requested", True)
