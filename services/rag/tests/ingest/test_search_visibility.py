"""A search by a user who can see no document of the collection answers at once with
nothing, without embedding the query (chat turns routed to knowledge cost no model time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestRequested
from weir_common.testing.embedders import CountingEmbedder
from weir_rag.ingest import InMemoryRegistry, LocalObjectStore
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge

from .conftest import FakeDense, FakeLexical

pytestmark = pytest.mark.unit


async def test_only_a_user_who_can_see_a_document_costs_a_query_embedding(
    tmp_path: Path, embedder: Embedder
) -> None:
    counting = CountingEmbedder(embedder)
    dense, lexical = FakeDense(), FakeLexical()
    service = Knowledge(LocalObjectStore.under(tmp_path), InMemoryRegistry(), counting, dense,
                        lexical, Retriever(counting, dense, lexical))  # fmt: skip
    assert await service.search("harbour crane colour", 3, "ann") == []
    ref = await service.store.put(b"# Notes\n\nThe harbour crane is painted orange.")
    await service.ingest(IngestRequested(document_id="d1", source="notes.md", object_ref=ref,
                                         owner="ann"))  # fmt: skip
    assert await service.search("harbour crane colour", 3, "bob") == []
    assert counting.queries == 0
    found = await service.search("harbour crane colour", 3, "ann")
    assert [p.source for p in found] == ["notes.md"]
    assert counting.queries == 1
    assert await service.search("harbour crane colour", 3, "ann", collection="other") == []
    assert counting.queries == 1
