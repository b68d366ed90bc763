"""The retrieval pipeline end to end on tantivy + Milvus Lite with real embeddings."""

from __future__ import annotations

import pytest

from weir_common.search.documents import Scope
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.retrieve.switches import RetrievalSwitches

from .conftest import chunk, load

pytestmark = pytest.mark.integration

CORPUS = [
    chunk("deploy#0", "To roll back a release, run weirctl rollback with the build number."),
    chunk("latency#0", "When responses get slow, check p95 latency on the gateway dashboard."),
    chunk("zh#0", "数据库连接池耗尽会导致请求超时，先检查慢查询和连接数上限。"),
    chunk(
        "csv#0",
        "Server table: instance m6i.2xlarge with 8 CPU cores and 32 GB memory",
        raw="| type | cpu | memory |\n| m6i.2xlarge | 8 | 32GB |",
    ),
    chunk("tiny#0", "ok"),
    chunk("private#0", "alice's own note: the rollback password is in the vault", owner="alice"),
]


async def test_hybrid_finds_lexical_and_semantic_matches(retriever: Retriever) -> None:
    await load(retriever, CORPUS)
    exact = await retriever.retrieve("weirctl rollback", 3, Scope())
    assert exact[0].chunk_id == "deploy#0"
    semantic = await retriever.retrieve("the service is sluggish, where do I look?", 3, Scope())
    assert semantic[0].chunk_id == "latency#0"
    chinese = await retriever.retrieve("连接池不够用怎么办", 3, Scope())
    assert chinese[0].chunk_id == "zh#0"


async def test_passages_carry_citations_and_raw_content(retriever: Retriever) -> None:
    await load(retriever, CORPUS)
    top = (await retriever.retrieve("how many CPU cores does the m6i.2xlarge have", 1, Scope()))[0]
    assert (top.chunk_id, top.document_id, top.source, top.locator) == (
        "csv#0",
        "csv",
        "csv.md",
        "## csv#0",
    )
    assert top.text.startswith("| type | cpu |")
    plain = await retriever.retrieve(
        "m6i.2xlarge cores", 1, Scope(), RetrievalSwitches(dual_storage=False)
    )
    assert plain[0].text.startswith("Server table")


async def test_private_chunks_reach_only_their_owner(retriever: Retriever) -> None:
    await load(retriever, CORPUS)
    for user in (None, "bob"):
        found = await retriever.retrieve("rollback password vault", 10, Scope(user_id=user))
        assert "private#0" not in [p.chunk_id for p in found]
    mine = await retriever.retrieve("rollback password vault", 3, Scope(user_id="alice"))
    assert mine[0].chunk_id == "private#0"


async def test_switches_select_the_retrievers(retriever: Retriever) -> None:
    await load(retriever, CORPUS)
    dense_only = RetrievalSwitches(lexical=False)
    lexical_only = RetrievalSwitches(dense=False)
    gibberish = "zzqx weirctl"
    assert (await retriever.retrieve(gibberish, 3, Scope(), lexical_only))[0].chunk_id == "deploy#0"
    assert len(await retriever.retrieve(gibberish, 3, Scope(), dense_only)) == 3
    assert len(await retriever.retrieve("nothing matches zzqx", 4, Scope(), lexical_only)) == 0


async def test_short_chunks_sink_and_sources_are_capped(retriever: Retriever) -> None:
    many = [
        chunk(
            f"big#{i}",
            f"release checklist item {i}: verify the rollback plan",
            source="checklist.md",
        )
        for i in range(6)
    ]
    await load(retriever, [*CORPUS, *many])
    hits = await retriever.search("release rollback checklist", 8, Scope())
    assert sum(h.chunk.source == "checklist.md" for h in hits) == 3
    off = RetrievalSwitches(source_diversity=False)
    assert (
        sum(
            h.chunk.source == "checklist.md"
            for h in await retriever.search("release rollback checklist", 8, Scope(), off)
        )
        == 6
    )
    scored = {h.chunk.chunk_id: h.score for h in await retriever.search("ok", 6, Scope())}
    raw = RetrievalSwitches(short_chunk_penalty=False)
    unscored = {h.chunk.chunk_id: h.score for h in await retriever.search("ok", 6, Scope(), raw)}
    assert scored["tiny#0"] < unscored["tiny#0"]
    assert scored["deploy#0"] == unscored["deploy#0"]


async def test_llm_stages_need_a_client(retriever: Retriever) -> None:
    with pytest.raises(ValueError, match="needs an LLM client"):
        await retriever.search("q", 3, Scope(), RetrievalSwitches(rerank="llm"))
    with pytest.raises(ValueError, match="needs an LLM client"):
        await retriever.search("q", 3, Scope(), RetrievalSwitches(query_rewrite="both"))
