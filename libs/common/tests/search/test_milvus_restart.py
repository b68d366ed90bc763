"""The Milvus adapter survives a restart of Milvus: reopened on the same data, or still open
while the server restarts under it, the stored vectors are found again (an existing
collection comes back released, and the adapter loads it)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest

from weir_common.errors import is_transient
from weir_common.search.milvus import MilvusVectorIndex
from weir_common.search.vectors import VectorIndexError, VectorRow, VectorSchema
from weir_deploy.milvus import MilvusEngine
from weir_deploy.milvus_server import CLEAN_STOP, unreadable_index_files

from .conftest import PARTITIONED, SCHEMA

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _row(rid: str) -> VectorRow:
    fields: dict[str, str | int] = {
        "user_id": "u1",
        "kind": "semantic",
        "session_id": "s1",
        "note": "",
        "rank": 1,
    }
    return VectorRow(rid, [1.0, 0.0, 0.0], fields)


async def _ids(index: MilvusVectorIndex) -> list[str]:
    return [m.id for m in await index.search([1.0, 0.0, 0.0], 3, {"user_id": "u1"})]


async def test_reopened_after_a_milvus_restart_finds_the_rows(private_milvus: MilvusEngine) -> None:
    index = MilvusVectorIndex(private_milvus.uri, "restart", 3, SCHEMA)
    await index.open()
    await index.upsert([_row("a")])
    await index.close()

    await private_milvus.stop()
    await private_milvus.start()

    reopened = MilvusVectorIndex(private_milvus.uri, "restart", 3, SCHEMA)
    await reopened.open()
    try:
        assert await _ids(reopened) == ["a"]
    finally:
        await reopened.close()


@pytest.mark.parametrize("index_type", ["FLAT", "HNSW"])
async def test_a_search_after_milvus_restarted_under_it_reloads(
    private_milvus: MilvusEngine, index_type: str
) -> None:
    schema = VectorSchema(fields=SCHEMA.fields, primary="row_id", index=index_type)  # type: ignore[arg-type]
    index = MilvusVectorIndex(private_milvus.uri, "live", 3, schema)
    await index.open()
    try:
        await index.upsert([_row("b")])
        # no wait for the index files: a stop lets Milvus Lite finish writing them (and one
        # a crash cut short is removed and built again, the tests below)
        await private_milvus.stop()
        await private_milvus.start()
        assert await _ids(index) == ["b"]
    finally:
        await index.close()


async def test_calls_made_while_milvus_was_away_do_not_hold_back_the_ones_after(
    private_milvus: MilvusEngine,
) -> None:
    # every failed call while Milvus is away lengthens gRPC's wait before it connects
    # again (1 s, then 1.6x, up to 2 min by default): the channel must still find the
    # restarted server within half a second, inside the harness's retries of a step
    index = MilvusVectorIndex(private_milvus.uri, "away", 3, SCHEMA)
    await index.open()
    try:
        await index.upsert([_row("c")])
        await index.wait_indexed(timeout_s=60)
        await private_milvus.stop()
        away = time.monotonic()
        while time.monotonic() - away < 6:
            with pytest.raises(VectorIndexError) as failed:
                await _ids(index)
            assert is_transient(failed.value)
            await asyncio.sleep(0.05)
        await private_milvus.start()
        back = time.monotonic()
        while True:
            try:
                found = await _ids(index)
                break
            except VectorIndexError:
                assert time.monotonic() - back < 2.5, "still failing 2.5 s after Milvus is back"
                await asyncio.sleep(0.1)
        assert found == ["c"]
    finally:
        await index.close()


def _index_files(engine: MilvusEngine, collection: str) -> list[Path]:
    return sorted((engine.data_dir / "milvus" / "collections" / collection).rglob("indexes/*idx"))


async def test_a_stop_lets_milvus_lite_close_its_collections(private_milvus: MilvusEngine) -> None:
    # Milvus Lite closes its collections (and waits for the index files it is writing) on
    # Ctrl-C only; the engine's SIGTERM must take the same way out
    index = MilvusVectorIndex(private_milvus.uri, "closing", 3, SCHEMA)
    await index.open()
    await index.upsert([_row("d")])
    await index.close()
    await private_milvus.stop()
    assert "Shutting down" in (private_milvus.data_dir / "logs" / "milvus.log").read_text()


@pytest.mark.parametrize("index_type", ["FLAT", "HNSW"])
async def test_an_index_file_a_crash_cut_short_is_built_again(
    private_milvus: MilvusEngine, index_type: str
) -> None:
    # a process killed while Milvus Lite writes a segment's index file leaves it short (empty
    # or cut), and Milvus Lite, finding the file, fails to load the collection ever after
    schema = replace(PARTITIONED, metric="COSINE", index=index_type)  # type: ignore[arg-type]
    index = MilvusVectorIndex(private_milvus.uri, "cut", 3, schema)
    await index.open()
    await index.upsert([_row("e")])
    await index.wait_indexed(timeout_s=60)
    await index.close()
    await private_milvus.stop()
    files = _index_files(private_milvus, "cut")
    assert {f.suffix for f in files} == {".idx", ".sidx"}, files
    for i, path in enumerate(files):
        kept = path.read_bytes()[: len(path.read_bytes()) // 2 if i % 2 else 0]
        path.write_bytes(kept)
    (private_milvus.data_dir / "milvus" / CLEAN_STOP).unlink()  # a crash leaves no mark
    assert unreadable_index_files(private_milvus.data_dir / "milvus") == files

    await private_milvus.start()
    reopened = MilvusVectorIndex(private_milvus.uri, "cut", 3, schema)
    await reopened.open()
    try:
        assert await _ids(reopened) == ["e"]
    finally:
        await reopened.close()
    assert _index_files(private_milvus, "cut") == files
    assert unreadable_index_files(private_milvus.data_dir / "milvus") == []
