"""Rag's DenseIndex (chunks on the shared Milvus adapter, Milvus Lite server), with real
e5 embeddings."""

from __future__ import annotations

import pytest

from weir_common.embeddings import Embedder
from weir_common.search.documents import Chunk, Scope
from weir_common.search.milvus import milvus_filter
from weir_common.testing.chunks import make_chunk
from weir_rag.index.dense import MilvusDenseIndex, scope_where

pytestmark = pytest.mark.integration

CORPUS = [
    make_chunk(
        "ops-0", "To restart a service, run systemctl restart on the host", document_id="ops"
    ),
    make_chunk(
        "ops-1", "Disk usage alerts fire when a volume is ninety percent full", document_id="ops"
    ),
    make_chunk("zh-0", "数据库连接池耗尽会导致服务超时，需要检查慢查询", document_id="zh"),
    make_chunk("zh-1", "Redis 缓存击穿的排查方法：检查热点 key 的过期时间", document_id="zh"),
    make_chunk("pets-0", "The dogs were running in the park every morning", document_id="pets"),
]


async def store(index: MilvusDenseIndex, embedder: Embedder, chunks: list[Chunk]) -> None:
    vectors = await embedder.embed_documents([c.semantic_text for c in chunks])
    await index.upsert(chunks, vectors)


async def top(
    index: MilvusDenseIndex, embedder: Embedder, query: str, scope: Scope | None = None
) -> list[str]:
    hits = await index.search(await embedder.embed_query(query), 5, scope or Scope())
    return [h.chunk.chunk_id for h in hits]


async def test_search_returns_whole_chunks_by_similarity(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    hits = await dense_index.search(
        await embedder.embed_query("how do I reboot a daemon"), 5, Scope()
    )
    assert hits[0].chunk == CORPUS[0]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert -1.0 <= hits[-1].score <= hits[0].score <= 1.0 + 1e-6


async def test_chinese_and_english_queries(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    assert (await top(dense_index, embedder, "数据库连接不够用，请求超时"))[0] == "zh-0"
    assert (await top(dense_index, embedder, "cache breakdown troubleshooting"))[0] == "zh-1"
    assert (await top(dense_index, embedder, "缓存热点数据失效怎么办"))[0] == "zh-1"
    assert (await top(dense_index, embedder, "the volume is almost full"))[0] == "ops-1"
    assert (await top(dense_index, embedder, "puppies playing outside"))[0] == "pets-0"


async def test_upsert_replaces_and_delete_counts(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    await store(
        dense_index, embedder, [make_chunk("pets-0", "cats sleep all day", document_id="pets")]
    )
    hits = await dense_index.search(await embedder.embed_query("cats"), 10, Scope())
    replaced = [h.chunk.semantic_text for h in hits if h.chunk.chunk_id == "pets-0"]
    assert replaced == ["cats sleep all day"]
    assert len(hits) == len(CORPUS)
    assert await dense_index.delete_document("ops") == 2
    assert await dense_index.delete_document("ops") == 0
    left = await dense_index.search([0.0] * 383 + [1.0], 10, Scope())
    assert {h.chunk.document_id for h in left} == {"zh", "pets"}


async def test_delete_document_keeps_the_chunks_just_written(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    fresh = make_chunk("ops-0", "Rebooting the host clears the stuck service", document_id="ops")
    await store(dense_index, embedder, [fresh])
    assert await dense_index.delete_document("ops", keep=[fresh]) == 1
    assert await dense_index.chunks_of("ops") == [fresh]


async def test_scope_isolation(dense_index: MilvusDenseIndex, embedder: Embedder) -> None:
    await store(
        dense_index,
        embedder,
        [
            make_chunk("s-0", "team budget for 2025", document_id="s"),
            make_chunk("a-0", "alice's private budget", document_id="a", owner="alice"),
            make_chunk("q-0", "quoted owner budget", document_id="q", owner='b" or owner != "'),
            make_chunk("o-0", "ops budget", document_id="o", collection="ops"),
        ],
    )
    assert await top(dense_index, embedder, "budget") == ["s-0"]
    assert sorted(await top(dense_index, embedder, "budget", Scope(user_id="alice"))) == [
        "a-0",
        "s-0",
    ]
    assert await top(dense_index, embedder, "budget", Scope(user_id="b")) == ["s-0"]
    injected = Scope(user_id='b" or owner != "')
    assert sorted(await top(dense_index, embedder, "budget", injected)) == ["q-0", "s-0"]
    assert await top(dense_index, embedder, "budget", Scope(collection="ops")) == ["o-0"]


@pytest.mark.unit
def test_scope_where_sees_the_collection_shared_and_own_chunks() -> None:
    assert scope_where(Scope(collection='c"x', user_id="u")) == {
        "collection": 'c"x',
        "owner": ["", "u"],
    }
    assert scope_where(Scope()) == {"collection": "default", "owner": [""]}
    # the quoting itself is the Milvus adapter's (libs/common's conformance suite)
    assert milvus_filter(scope_where(Scope(user_id='b"'))) == (
        'collection == "default" and owner in ["", "b\\""]'
    )


async def test_wait_indexed_returns_once_built(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    await dense_index.wait_indexed(timeout_s=60)
    assert len(await dense_index.search([1.0] + [0.0] * 383, 3, Scope())) == 3


async def test_chunks_of_a_document_come_back_in_order(
    dense_index: MilvusDenseIndex, embedder: Embedder
) -> None:
    await store(dense_index, embedder, CORPUS)
    chunks = await dense_index.chunks_of("ops")
    assert {c.chunk_id for c in chunks} == {"ops-0", "ops-1"}
    assert [c.chunk_index for c in chunks] == sorted(c.chunk_index for c in chunks)
    assert await dense_index.chunks_of("nothing") == []
