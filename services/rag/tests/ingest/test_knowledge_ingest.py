"""`Knowledge.ingest`: an engine failure raises (the bus retries it), a bad file does not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestFailed, IngestRequested
from weir_common.search.documents import Chunk
from weir_rag.ingest import InMemoryRegistry, LocalObjectStore, ingest
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge

from .conftest import FakeDense, FakeLexical

pytestmark = pytest.mark.unit


class DeleteCrashes(FakeDense):
    """A dense index whose engine goes away when stale chunks are deleted."""

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        raise ConnectionError("milvus: connection refused")


class UnreachableDense(FakeDense):
    """A dense index whose engine went away."""

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        raise ConnectionError("milvus: connection refused")


def knowledge(tmp_path: Path, embedder: Embedder, dense: FakeDense) -> Knowledge:
    retriever = Retriever(embedder, dense, None)
    return Knowledge(
        LocalObjectStore.under(tmp_path), InMemoryRegistry(), embedder, dense, FakeLexical(),
        retriever,
    )  # fmt: skip


async def test_an_engine_failure_raises_instead_of_failing_the_document(
    tmp_path: Path, embedder: Embedder
) -> None:
    service = knowledge(tmp_path, embedder, UnreachableDense())
    ref = await service.store.put(b"# Title\n\nSome text worth keeping.")
    request = IngestRequested(document_id="d1", source="a.md", object_ref=ref)
    with pytest.raises(ConnectionError):
        await service.ingest(request)


async def test_a_bad_document_is_still_a_failure_with_a_reason(
    tmp_path: Path, embedder: Embedder
) -> None:
    service = knowledge(tmp_path, embedder, FakeDense())
    ref = await service.store.put(b"%PDF-1.4 not really a pdf")
    request = IngestRequested(document_id="d2", source="broken.pdf", object_ref=ref)
    outcome = await service.ingest(request)
    assert isinstance(outcome, IngestFailed)
    assert outcome.reason


async def test_a_crash_while_replacing_leaves_the_new_chunks_searchable(
    tmp_path: Path, embedder: Embedder
) -> None:
    store, registry, dense, lexical = (
        LocalObjectStore.under(tmp_path), InMemoryRegistry(), DeleteCrashes(), FakeLexical()
    )  # fmt: skip

    async def run(text: bytes) -> None:
        request = IngestRequested(document_id="d3", source="a.md", object_ref=await store.put(text))
        await ingest(request, store, registry, embedder, dense, lexical)

    await run(b"# Old\n\nThe old text.")
    with pytest.raises(ConnectionError):
        await run(b"# New\n\nThe new text about failover.")
    texts = [c.semantic_text for c, _ in dense.chunks.values()]
    assert any("failover" in t for t in texts)
    assert any("failover" in c.semantic_text for c in lexical.chunks.values())
