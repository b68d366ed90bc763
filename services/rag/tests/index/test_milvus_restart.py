"""The Milvus dense index keeps working when Milvus restarts under a running service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weir_deploy.base import free_port
from weir_deploy.milvus import MilvusEngine
from weir_rag.index.base import Scope
from weir_rag.index.milvus import MilvusDenseIndex

from .conftest import make_chunk

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
async def milvus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MilvusEngine]:
    """A private Milvus Lite server on its own data dir, so restarting it disturbs no one."""
    monkeypatch.delenv("MILVUS_URI", raising=False)
    engine = MilvusEngine(tmp_path, free_port())
    await engine.start()
    yield engine
    await engine.stop()


async def test_a_search_after_milvus_restarted_under_it_reloads(milvus: MilvusEngine) -> None:
    index = MilvusDenseIndex(milvus.uri, 3, collection="restart")
    await index.open()
    try:
        await index.upsert([make_chunk("a-0", "kept across a restart")], [[1.0, 0.0, 0.0]])
        await index.flush()
        await milvus.stop()
        await milvus.start()
        hits = await index.search([1.0, 0.0, 0.0], 3, Scope())
        assert [h.chunk.chunk_id for h in hits] == ["a-0"]
    finally:
        await index.close()
