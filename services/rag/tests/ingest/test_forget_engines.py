""" "Forget me" in the knowledge service on its real engines: PostgreSQL (the registry and
the tombstone), Milvus (dense vectors), tantivy (the embedded BM25 index) and the object
store on disk. After the forget, no store holds the user's words or files; a file another
document uses stays; an upload requested before the forget is refused."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestCompleted, IngestFailed, IngestRequested
from weir_common.objects import ObjectNotFoundError
from weir_common.search.documents import Scope
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_rag.index.dense import MilvusDenseIndex
from weir_rag.ingest import LocalObjectStore, PostgresRegistry
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge

pytestmark = pytest.mark.integration

SECRET = "Quetzalcoatl marmalade recipe from grandmother Wilhelmina"
SHARED = b"# Handbook\n\nThe office handbook: backups run nightly at two."
BEFORE = datetime.now(UTC) - timedelta(minutes=5)


@pytest.fixture
async def knowledge(
    database_url: str, milvus_env: dict[str, str], embedder: Embedder, tmp_path: Path
) -> AsyncIterator[Knowledge]:
    """The knowledge service's logic over real engines, each in a namespace of its own."""
    registry = PostgresRegistry(database_url)
    dense = MilvusDenseIndex(milvus_env["MILVUS_URI"], 384, collection=f"t_{uuid.uuid4().hex}")
    lexical = TantivyLexicalIndex(tmp_path / "tantivy")
    for engine in (registry, dense, lexical):
        await engine.open()
    try:
        yield Knowledge(LocalObjectStore.under(tmp_path), registry, embedder, dense, lexical,
                        Retriever(embedder, dense, lexical))  # fmt: skip
    finally:
        for engine in (lexical, dense, registry):
            await engine.close()


async def request(
    service: Knowledge, doc: str, text: bytes, owner: str | None, at: datetime = BEFORE
) -> IngestRequested:
    ref = await service.store.put(text)
    return IngestRequested(document_id=doc, source=f"{doc}.md", object_ref=ref, owner=owner,
                           occurred_at=at)  # fmt: skip


async def rows_of(database_url: str, owner: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        found: int = await conn.fetchval(
            "SELECT count(*) FROM rag_documents WHERE owner = $1 OR source LIKE '%' || $1 || '%'",
            owner,
        )
    finally:
        await conn.close()
    return found


async def test_after_forget_no_engine_holds_the_users_documents(
    knowledge: Knowledge, database_url: str
) -> None:
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    diary = await request(knowledge, f"{alice}-diary", f"# Diary\n\n{SECRET}.".encode(), alice)
    copy = await request(knowledge, f"{alice}-handbook", SHARED, alice)
    handbook = await request(knowledge, "handbook", SHARED, None)
    for r in (diary, copy, handbook):
        assert isinstance(await knowledge.ingest(r), IngestCompleted)
    mine = Scope(user_id=alice)
    assert await knowledge.lexical.search("Quetzalcoatl marmalade", 5, mine)
    # an upload still in flight when she is forgotten
    late = await request(knowledge, f"{alice}-late", b"# Late\n\nWilhelmina's jam.", alice)

    done = await knowledge.forget_user(alice, datetime.now(UTC))
    assert (done["documents"], done["files"]) == (2, 1)
    assert await rows_of(database_url, alice) == 0
    for doc in (diary.document_id, copy.document_id):
        assert await knowledge.dense.chunks_of(doc) == []
    assert await knowledge.lexical.search("Quetzalcoatl marmalade Wilhelmina", 10, mine) == []
    vector = await knowledge.embedder.embed_query(SECRET)
    hits = await knowledge.dense.search(vector, 10, mine)
    assert all(h.chunk.owner is None for h in hits), "only shared chunks are left"
    with pytest.raises(ObjectNotFoundError):
        await knowledge.store.get(diary.object_ref)
    assert await knowledge.store.get(handbook.object_ref) == SHARED, "the shared file stays"
    assert await knowledge.dense.chunks_of("handbook") != []

    refused = await knowledge.ingest(late)
    assert isinstance(refused, IngestFailed), "requested before the forget"
    assert await rows_of(database_url, alice) == 0
    assert await knowledge.lexical.search("Wilhelmina jam", 10, mine) == []
    with pytest.raises(ObjectNotFoundError):
        await knowledge.store.get(late.object_ref)
    again = await knowledge.forget_user(alice, datetime.now(UTC))
    assert (again["documents"], again["chunks"], again["files"]) == (0, 0, 0)
