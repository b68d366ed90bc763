"""The LexicalIndex contract, run against every adapter (tantivy and Elasticsearch)."""

from __future__ import annotations

import pytest

from weir_common.search.documents import Scope
from weir_common.search.lexical import LexicalIndex
from weir_common.testing.chunks import make_chunk

pytestmark = pytest.mark.integration

CORPUS = [
    make_chunk(
        "ops-0", "Restarting a service: run systemctl restart on the host", document_id="ops"
    ),
    make_chunk(
        "ops-1", "Disk usage alerts fire when a volume is 90 percent full", document_id="ops"
    ),
    make_chunk("zh-0", "数据库连接池耗尽会导致服务超时，需要检查慢查询", document_id="zh"),
    make_chunk("zh-1", "Redis 缓存击穿的排查方法：检查热点 key 的过期时间", document_id="zh"),
    make_chunk("pets-0", "The dogs were running in the park every morning", document_id="pets"),
]


async def ids(index: LexicalIndex, query: str, scope: Scope | None = None, k: int = 5) -> list[str]:
    return [h.chunk.chunk_id for h in await index.search(query, k, scope or Scope())]


async def test_search_returns_the_whole_chunk(lexical_index: LexicalIndex) -> None:
    chunk = make_chunk("csv-0", "server m6i.2xlarge has 8 cores", raw="| type | cpu |\n| m6i | 8 |")
    await lexical_index.upsert([chunk])
    hits = await lexical_index.search("cores", 3, Scope())
    assert [h.chunk for h in hits] == [chunk]
    assert hits[0].score > 0


async def test_upsert_replaces_the_same_id(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert([make_chunk("a-0", "alpha version of the text")])
    await lexical_index.upsert([make_chunk("a-0", "bravo version of the text")])
    assert await ids(lexical_index, "alpha") == []
    assert await ids(lexical_index, "bravo") == ["a-0"]
    assert await ids(lexical_index, "version") == ["a-0"]


async def test_delete_document_removes_only_its_chunks(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(CORPUS)
    assert await lexical_index.delete_document("ops") == 2
    assert await ids(lexical_index, "restart service disk") == []
    assert await ids(lexical_index, "dogs") == ["pets-0"]
    assert await lexical_index.delete_document("ops") == 0
    assert await lexical_index.delete_document("never-indexed") == 0


async def test_delete_document_keeps_the_chunks_just_written(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(CORPUS)
    fresh = make_chunk("ops-0", "Rebooting the host clears the stuck service", document_id="ops")
    moved = make_chunk("ops-1", "Volumes fill up", document_id="ops", collection="other")
    await lexical_index.upsert([fresh, moved])
    assert await lexical_index.delete_document("ops", keep=[fresh, moved]) == 1
    assert await ids(lexical_index, "rebooting disk systemctl") == ["ops-0"]
    assert await ids(lexical_index, "volumes", Scope(collection="other")) == ["ops-1"]
    assert await ids(lexical_index, "dogs") == ["pets-0"]


async def test_private_chunks_stay_with_their_owner(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(
        [
            make_chunk("s-0", "quarterly budget shared with everyone", document_id="shared"),
            make_chunk("p-0", "quarterly budget of alice", document_id="pa", owner="alice"),
            make_chunk(
                "q-0", 'quarterly budget of "bob" or 1', document_id="pb", owner='bob" or "1'
            ),
        ]
    )
    assert await ids(lexical_index, "quarterly budget") == ["s-0"]
    assert sorted(await ids(lexical_index, "quarterly budget", Scope(user_id="alice"))) == [
        "p-0",
        "s-0",
    ]
    assert await ids(lexical_index, "quarterly budget", Scope(user_id="bob")) == ["s-0"]
    assert "q-0" in await ids(lexical_index, "budget", Scope(user_id='bob" or "1'))


async def test_collections_are_separate(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert([make_chunk("c-0", "kubernetes pod eviction", collection="ops")])
    assert await ids(lexical_index, "eviction") == []
    assert await ids(lexical_index, "eviction", Scope(collection="ops")) == ["c-0"]
    assert await ids(lexical_index, "eviction", Scope(collection="never-created")) == []


async def test_english_is_stemmed(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(CORPUS)
    assert (await ids(lexical_index, "how to restart services"))[0] == "ops-0"
    assert (await ids(lexical_index, "dog runs"))[0] == "pets-0"


async def test_chinese_words_match_inside_sentences(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(CORPUS)
    assert (await ids(lexical_index, "连接池"))[0] == "zh-0"
    assert (await ids(lexical_index, "缓存击穿怎么排查"))[0] == "zh-1"
    assert (await ids(lexical_index, "服务超时的原因"))[0] == "zh-0"


async def test_ranking_follows_term_overlap(lexical_index: LexicalIndex) -> None:
    await lexical_index.upsert(
        [
            make_chunk("r-0", "kafka consumer lag grows when the consumer group rebalances"),
            make_chunk("r-1", "kafka broker configuration"),
            make_chunk("r-2", "unrelated notes about gardening"),
        ]
    )
    hits = await lexical_index.search("kafka consumer lag", 5, Scope())
    assert [h.chunk.chunk_id for h in hits] == ["r-0", "r-1"]
    assert hits[0].score > hits[1].score
    assert len(await lexical_index.search("kafka", 1, Scope())) == 1


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", 'owner:"x" OR *:*', "AND (foo"])
async def test_odd_queries_do_not_fail(lexical_index: LexicalIndex, query: str) -> None:
    await lexical_index.upsert(CORPUS)
    hits = await lexical_index.search(query, 5, Scope())
    assert all(h.chunk.chunk_id in {c.chunk_id for c in CORPUS} for h in hits)
