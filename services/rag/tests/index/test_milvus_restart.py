"""The Milvus dense index keeps working when Milvus restarts under a running service."""

from __future__ import annotations

import pytest

from weir_deploy.milvus import MilvusEngine
from weir_rag.index.base import Scope
from weir_rag.index.milvus import MilvusDenseIndex

from .conftest import make_chunk

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_a_search_after_milvus_restarted_under_it_reloads(
    private_milvus: MilvusEngine,
) -> None:
    index = MilvusDenseIndex(private_milvus.uri, 3, collection="restart")
    await index.open()
    try:
        await index.upsert([make_chunk("a-0", "kept across a restart")], [[1.0, 0.0, 0.0]])
        # the index file is complete on disk before the stop: Milvus Lite stopped while it
        # writes an HNSW file reloads a truncated one ("read error … 0 != 1") on a loaded
        # machine, a fault of its own storage and not what this test is about
        await index.wait_indexed(timeout_s=60)
        await private_milvus.stop()
        await private_milvus.start()
        hits = await index.search([1.0, 0.0, 0.0], 3, Scope())
        assert [h.chunk.chunk_id for h in hits] == ["a-0"]
    finally:
        await index.close()
