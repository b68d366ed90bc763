"""Fixtures of the index conformance suites: each adapter on a real engine, in a namespace
of its own (Haystack-style: one suite, parametrised over every adapter).

``lexical_index`` runs on tantivy and Elasticsearch (the node starts only when an
Elasticsearch case runs, once per session); ``vector_index`` on the in-process adapter (unit
tier) and on Milvus Lite (integration tier).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from weir_common.search.elastic import ElasticLexicalIndex
from weir_common.search.inprocess_vectors import InMemoryVectorIndex
from weir_common.search.lexical import LexicalIndex
from weir_common.search.milvus import MilvusVectorIndex
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_common.search.vectors import VectorField, VectorIndex, VectorSchema

#: A schema like memory's: who owns a row, what kind it is, a session, and an integer; the
#: key not named "id" (pymilvus names hits' keys after the primary field).
SCHEMA = VectorSchema(
    primary="row_id",
    fields=(
        VectorField("user_id", 256),
        VectorField("kind", 16),
        VectorField("session_id", 256),
        VectorField("note", 8, truncate=True),
        VectorField("rank", None),
    ),
)

#: memory's layout: IP over unit vectors, each user's rows in one of a few partitions, the
#: fields filters name indexed
PARTITIONED = replace(
    SCHEMA,
    fields=tuple(
        replace(f, indexed=True) if f.name in {"user_id", "kind", "session_id"} else f
        for f in SCHEMA.fields
    ),
    metric="IP",
    partition_by="user_id",
    partitions=4,
)


def unit(*xs: float) -> list[float]:
    """`xs` scaled to length 1."""
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


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


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("milvus", marks=pytest.mark.integration),
        pytest.param("milvus-ip", marks=pytest.mark.integration),
        pytest.param("milvus-partitioned", marks=pytest.mark.integration),
    ]
)
async def vector_index(request: pytest.FixtureRequest) -> AsyncIterator[VectorIndex]:
    """An open, empty 3-d vector index of each adapter (a fresh Milvus collection, with
    the COSINE metric, with IP over unit vectors, and partitioned by user)."""
    made: VectorIndex
    if request.param == "memory":
        made = InMemoryVectorIndex(3, SCHEMA)
    else:
        env: dict[str, str] = request.getfixturevalue("milvus_env")
        schema = {
            "milvus-ip": replace(SCHEMA, metric="IP"),
            "milvus-partitioned": PARTITIONED,
        }.get(request.param, SCHEMA)
        made = MilvusVectorIndex(env["MILVUS_URI"], f"idx_{uuid.uuid4().hex[:12]}", 3, schema)
    await made.open()
    try:
        yield made
    finally:
        await made.close()
