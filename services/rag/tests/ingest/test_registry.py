"""One registry suite, run against the in-memory adapter and against real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from weir_deploy.pytest_plugin import fresh_database
from weir_rag.ingest import (
    Decision,
    DocumentInfo,
    DocumentRegistry,
    InMemoryRegistry,
    PostgresRegistry,
)


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("postgres", marks=pytest.mark.integration),
    ]
)
async def registry(request: pytest.FixtureRequest) -> AsyncIterator[DocumentRegistry]:
    """Each adapter, opened on empty storage."""
    if request.param == "memory":
        yield InMemoryRegistry()
        return
    async with fresh_database(request.getfixturevalue("postgres_url")) as url:
        adapter = PostgresRegistry(url)
        await adapter.open()
        try:
            yield adapter
        finally:
            await adapter.close()


def info(
    content_hash: str = "h1", document_id: str = "doc-1", collection: str = "kb"
) -> DocumentInfo:
    return DocumentInfo(document_id, f"{document_id}.md", collection, None, content_hash)


async def test_new_unchanged_changed(registry: DocumentRegistry) -> None:
    assert await registry.decide(info("h1")) is Decision.NEW
    first = await registry.mark_ready(info("h1"), 7)
    assert (first.status, first.chunk_count, first.content_hash) == ("ready", 7, "h1")
    assert await registry.decide(info("h1")) is Decision.UNCHANGED
    assert await registry.decide(info("h1"), force=True) is Decision.CHANGED
    assert await registry.decide(info("h2")) is Decision.CHANGED
    second = await registry.mark_ready(info("h2"), 3)
    assert (second.chunk_count, second.content_hash) == (3, "h2")
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


async def test_failures_keep_what_is_indexed(registry: DocumentRegistry) -> None:
    failed = await registry.mark_failed(info("h1"), "the PDF is encrypted")
    assert (failed.status, failed.error, failed.chunk_count) == (
        "failed",
        "the PDF is encrypted",
        0,
    )
    assert await registry.decide(info("h1")) is Decision.NEW  # nothing was indexed yet
    await registry.mark_ready(info("h1"), 5)
    broken = await registry.mark_failed(info("h2"), "the PDF is damaged: x")
    assert (broken.content_hash, broken.chunk_count, broken.status) == ("h1", 5, "failed")
    assert await registry.decide(info("h2")) is Decision.CHANGED
    assert await registry.decide(info("h1")) is Decision.CHANGED  # retried after a failure
    ready = await registry.mark_ready(info("h2"), 2)
    assert (ready.status, ready.error) == ("ready", None)


async def test_list_get_delete(registry: DocumentRegistry) -> None:
    for n in range(5):
        await registry.mark_ready(info(f"h{n}", f"doc-{n}", "kb" if n % 2 == 0 else "other"), n)
    page1 = await registry.list(limit=2)
    page2 = await registry.list(after=page1[-1].document_id, limit=2)
    page3 = await registry.list(after=page2[-1].document_id, limit=2)
    assert [r.document_id for r in page1 + page2 + page3] == [f"doc-{n}" for n in range(5)]
    assert [r.document_id for r in await registry.list(collection="kb")] == [
        "doc-0",
        "doc-2",
        "doc-4",
    ]
    record = await registry.get("doc-3")
    assert record is not None
    assert record.collection == "other"
    assert record.chunk_count == 3
    assert await registry.delete("doc-3") is True
    assert await registry.delete("doc-3") is False
    assert await registry.get("doc-3") is None


async def test_a_users_documents_the_files_others_use_and_the_tombstone(
    registry: DocumentRegistry,
) -> None:
    def owned(document_id: str, owner: str | None, ref: str) -> DocumentInfo:
        return DocumentInfo(document_id, f"{document_id}.md", "kb", owner, "h", ref)

    await registry.mark_ready(owned("a1", "alice", "file:///o/1"), 1)
    await registry.mark_failed(owned("a2", "alice", "file:///o/2"), "broken")
    await registry.mark_ready(owned("s1", None, "file:///o/2"), 1)
    await registry.mark_ready(owned("b1", "bob", "file:///o/3"), 1)
    assert [r.document_id for r in await registry.owned_by("alice")] == ["a1", "a2"]
    refs = ["file:///o/1", "file:///o/2", "file:///o/3"]
    assert await registry.refs_in_use(refs, ["a1", "a2"]) == {"file:///o/2", "file:///o/3"}
    assert await registry.forgotten_at("alice") is None
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert await registry.tombstone("alice", at) == at
    assert await registry.tombstone("alice", at - timedelta(days=1)) == at, "never moved back"
    assert await registry.tombstone("alice", at + timedelta(days=1)) == at + timedelta(days=1)
    assert await registry.forgotten_at("alice") == at + timedelta(days=1)
    assert await registry.forgotten_at("bob") is None


async def test_searchable_means_visible_with_chunks(registry: DocumentRegistry) -> None:
    assert not await registry.any_searchable("kb", "ann")
    private = DocumentInfo("mine", "mine.md", "kb", "ann", "h1")
    await registry.mark_failed(private, "the PDF is encrypted")  # nothing indexed
    assert not await registry.any_searchable("kb", "ann")
    await registry.mark_ready(private, 4)
    assert await registry.any_searchable("kb", "ann")
    assert not await registry.any_searchable("kb", "bob")
    assert not await registry.any_searchable("other", "ann")
    await registry.mark_ready(info("h1", "shared"), 2)
    assert await registry.any_searchable("kb", "bob")
    assert await registry.any_searchable("kb", None)
