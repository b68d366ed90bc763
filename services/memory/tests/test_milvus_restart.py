"""Memory's Milvus adapter survives a restart of Milvus: reopened on the same data, or still
open while the server restarts under it, the stored vectors are found again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weir_deploy.base import free_port
from weir_deploy.milvus import MilvusEngine
from weir_memory.longterm.index import VectorRecord
from weir_memory.longterm.milvus_index import MilvusVectorIndex

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
async def milvus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MilvusEngine]:
    """A private Milvus Lite server on its own data dir, so restarting it disturbs no one."""
    monkeypatch.delenv("MILVUS_URI", raising=False)
    engine = MilvusEngine(tmp_path, free_port())
    await engine.start()
    yield engine
    await engine.stop()


def _record(rid: str) -> VectorRecord:
    return VectorRecord(rid, "u1", "semantic", [1.0, 0.0, 0.0], "s1")


async def _ids(index: MilvusVectorIndex) -> list[str]:
    return [h.id for h in await index.search("u1", ["semantic"], [1.0, 0.0, 0.0], 5)]


async def test_reopened_after_a_milvus_restart_finds_the_rows(milvus: MilvusEngine) -> None:
    index = MilvusVectorIndex(milvus.uri, "restart")
    await index.open(3)
    await index.upsert([_record("a")])
    await index.flush()
    await index.close()

    await milvus.stop()
    await milvus.start()

    reopened = MilvusVectorIndex(milvus.uri, "restart")
    await reopened.open(3)
    try:
        assert await _ids(reopened) == ["a"]
    finally:
        await reopened.close()


async def test_a_search_after_milvus_restarted_under_it_reloads(milvus: MilvusEngine) -> None:
    index = MilvusVectorIndex(milvus.uri, "live")
    await index.open(3)
    try:
        await index.upsert([_record("b")])
        await index.flush()
        await milvus.stop()
        await milvus.start()
        assert await _ids(index) == ["b"]
    finally:
        await index.close()
