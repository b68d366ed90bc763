""" "Forget me" in the knowledge service, over fakes of the indexes: which stored files go,
and which ingestions are refused (the engines have `test_forget_engines.py`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestCompleted, IngestFailed, IngestRequested
from weir_common.objects import ObjectNotFoundError
from weir_rag.forget import REFUSED_REASON, orphaned, refused
from weir_rag.ingest import InMemoryRegistry, LocalObjectStore
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge

from .conftest import FakeDense, FakeLexical

pytestmark = pytest.mark.unit

AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_file_goes_only_when_no_other_document_uses_it() -> None:
    assert orphaned(["f1", "f2", "f1", ""], in_use={"f2"}) == ["f1"]
    assert orphaned([], in_use=set()) == []


def test_only_private_ingestions_requested_before_the_tombstone_are_refused() -> None:
    def request(owner: str | None, at: datetime) -> IngestRequested:
        return IngestRequested(
            document_id="d", source="a.md", object_ref="file:///x", owner=owner, occurred_at=at
        )

    assert refused(request("u1", AT - timedelta(seconds=1)), AT)
    assert refused(request("u1", AT), AT), "the forget wins a tie"
    assert not refused(request("u1", AT + timedelta(seconds=1)), AT)
    assert not refused(request("u1", AT - timedelta(seconds=1)), None)
    assert not refused(request(None, AT - timedelta(seconds=1)), AT), "shared: never"


def knowledge(tmp_path: Path, embedder: Embedder) -> Knowledge:
    dense = FakeDense()
    return Knowledge(
        LocalObjectStore.under(tmp_path), InMemoryRegistry(), embedder, dense, FakeLexical(),
        Retriever(embedder, dense, None),
    )  # fmt: skip


async def upload(
    service: Knowledge, doc: str, text: bytes, owner: str | None, at: datetime = AT
) -> IngestRequested:
    ref = await service.store.put(text)
    return IngestRequested(document_id=doc, source=f"{doc}.md", object_ref=ref, owner=owner,
                           occurred_at=at)  # fmt: skip


async def test_forget_deletes_the_users_documents_and_unshared_files(
    tmp_path: Path, embedder: Embedder
) -> None:
    service = knowledge(tmp_path, embedder)
    mine = await upload(service, "mine", b"# Diary\n\nMy private zebra notes.", "u1")
    shared_bytes = b"# Handbook\n\nThe shared handbook text."
    copy = await upload(service, "copy", shared_bytes, "u1")
    handbook = await upload(service, "handbook", shared_bytes, None)
    theirs = await upload(service, "theirs", b"# Other\n\nSomeone else's notes.", "u2")
    for request in (mine, copy, handbook, theirs):
        assert isinstance(await service.ingest(request), IngestCompleted)

    done = await service.forget_user("u1", AT + timedelta(hours=1))
    assert (done["documents"], done["files"]) == (2, 1)
    assert await service.registry.owned_by("u1") == []
    assert await service.dense.chunks_of("mine") == []
    assert await service.dense.chunks_of("copy") == []
    assert not any("zebra" in c.semantic_text for c in service.lexical.chunks.values())  # type: ignore[attr-defined]
    with pytest.raises(ObjectNotFoundError):
        await service.store.get(mine.object_ref)
    assert await service.store.get(handbook.object_ref) == shared_bytes, "still used"
    assert await service.dense.chunks_of("theirs") != []
    again = await service.forget_user("u1", AT + timedelta(hours=1))
    assert (again["documents"], again["chunks"], again["files"]) == (0, 0, 0)


async def test_an_upload_from_before_the_forget_is_refused_and_its_file_deleted(
    tmp_path: Path, embedder: Embedder
) -> None:
    service = knowledge(tmp_path, embedder)
    late = await upload(service, "late", b"# Late\n\nAn upload still in flight.", "u1")
    await service.forget_user("u1", AT + timedelta(seconds=1))
    outcome = await service.ingest(late)
    assert isinstance(outcome, IngestFailed)
    assert outcome.reason == REFUSED_REASON
    assert await service.registry.get("late") is None
    with pytest.raises(ObjectNotFoundError):
        await service.store.get(late.object_ref)
    after = await upload(service, "after", b"# New\n\nUploaded after.", "u1",
                         at=AT + timedelta(minutes=1))  # fmt: skip
    assert isinstance(await service.ingest(after), IngestCompleted), "a new upload is welcome"
