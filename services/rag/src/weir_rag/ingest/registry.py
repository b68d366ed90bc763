"""The document registry: which documents are indexed, from which content, in what state.

`decide` compares a document's content hash with the registered one: new → ingest,
unchanged → skip, changed → replace (the caller deletes the old chunks by document_id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal, Protocol

Status = Literal["ready", "failed"]


class Decision(StrEnum):
    """What to do with a submitted document."""

    NEW = "new"
    UNCHANGED = "unchanged"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """A document as submitted: identity, where it is shown, and its content hash (SHA-256)."""

    document_id: str
    source: str
    collection: str
    owner: str | None
    content_hash: str
    object_ref: str = ""


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A registered document; `content_hash`/`chunk_count` describe what is indexed now."""

    document_id: str
    source: str
    collection: str
    owner: str | None
    content_hash: str
    chunk_count: int
    status: Status
    error: str | None
    created_at: datetime
    updated_at: datetime
    object_ref: str = ""

    def visible_to(self, user_id: str | None) -> bool:
        """Shared documents are visible to everyone, private ones to their owner only."""
        return self.owner is None or self.owner == user_id


def decide(record: DocumentRecord | None, content_hash: str, force: bool) -> Decision:
    """The rule every adapter applies (a failed first attempt left nothing indexed: new)."""
    if record is None or (record.status == "failed" and record.chunk_count == 0):
        return Decision.NEW
    if record.status == "ready" and record.content_hash == content_hash and not force:
        return Decision.UNCHANGED
    return Decision.CHANGED


class DocumentRegistry(Protocol):
    """Storage of document records (PostgreSQL in production, memory in tests)."""

    async def open(self) -> None:
        """Connect and create the table if missing."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def decide(self, info: DocumentInfo, force: bool = False) -> Decision:
        """New, unchanged or changed, given the submitted content hash."""
        ...

    async def mark_ready(self, info: DocumentInfo, chunk_count: int) -> DocumentRecord:
        """Record that `info`'s content is indexed as `chunk_count` chunks."""
        ...

    async def mark_failed(self, info: DocumentInfo, reason: str) -> DocumentRecord:
        """Record a failed attempt; chunks indexed earlier (and their hash) stay as they were."""
        ...

    async def get(self, document_id: str) -> DocumentRecord | None:
        """One record."""
        ...

    async def list(
        self, collection: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[DocumentRecord]:
        """Records ordered by document_id, those after `after` (keyset paging)."""
        ...

    async def delete(self, document_id: str) -> bool:
        """Forget a document; False when it was not registered."""
        ...

    async def any_searchable(self, collection: str, user_id: str | None) -> bool:
        """True when some document of `collection` that `user_id` may see has chunks."""
        ...

    async def owned_by(self, owner: str) -> Sequence[DocumentRecord]:
        """Every private document of `owner` (ready or failed)."""
        ...

    async def refs_in_use(self, refs: Sequence[str], excluding: Sequence[str]) -> set[str]:
        """Those of `refs` (stored files) that a document other than `excluding` uses."""
        ...

    async def tombstone(self, owner: str, at: datetime) -> datetime:
        """Record that `owner` was forgotten at `at` (never moved back); the tombstone now."""
        ...

    async def forgotten_at(self, owner: str) -> datetime | None:
        """When `owner` was last forgotten (None: never)."""
        ...


class InMemoryRegistry:
    """A :class:`DocumentRegistry` in a dict (tests, one-off command-line runs)."""

    def __init__(self) -> None:
        self._records: dict[str, DocumentRecord] = {}
        self._forgotten: dict[str, datetime] = {}

    async def open(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """Nothing to release."""

    async def decide(self, info: DocumentInfo, force: bool = False) -> Decision:
        """See :func:`decide`."""
        return decide(self._records.get(info.document_id), info.content_hash, force)

    async def mark_ready(self, info: DocumentInfo, chunk_count: int) -> DocumentRecord:
        """Insert or update as ready."""
        return self._store(info, info.content_hash, chunk_count, "ready", None)

    async def mark_failed(self, info: DocumentInfo, reason: str) -> DocumentRecord:
        """Insert or update as failed, keeping what is indexed."""
        old = self._records.get(info.document_id)
        digest, count = (old.content_hash, old.chunk_count) if old else (info.content_hash, 0)
        return self._store(info, digest, count, "failed", reason)

    def _store(
        self, info: DocumentInfo, digest: str, count: int, status: Status, error: str | None
    ) -> DocumentRecord:
        now = datetime.now(UTC)
        old = self._records.get(info.document_id)
        record = DocumentRecord(
            info.document_id, info.source, info.collection, info.owner, digest, count,
            status, error, old.created_at if old else now, now, info.object_ref,
        )  # fmt: skip
        self._records[info.document_id] = record
        return replace(record)

    async def get(self, document_id: str) -> DocumentRecord | None:
        """One record."""
        return self._records.get(document_id)

    async def list(
        self, collection: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[DocumentRecord]:
        """Ordered by document_id."""
        rows = sorted(self._records.values(), key=lambda r: r.document_id)
        rows = [r for r in rows if collection is None or r.collection == collection]
        return [r for r in rows if after is None or r.document_id > after][:limit]

    async def delete(self, document_id: str) -> bool:
        """Remove a record."""
        return self._records.pop(document_id, None) is not None

    async def any_searchable(self, collection: str, user_id: str | None) -> bool:
        """A visible document of the collection with chunks."""
        return any(r.collection == collection and r.chunk_count > 0 and r.visible_to(user_id)
                   for r in self._records.values())  # fmt: skip

    async def owned_by(self, owner: str) -> Sequence[DocumentRecord]:
        """The owner's records, by document_id."""
        return sorted(
            (r for r in self._records.values() if r.owner == owner), key=lambda r: r.document_id
        )

    async def refs_in_use(self, refs: Sequence[str], excluding: Sequence[str]) -> set[str]:
        """Refs used by a record not in `excluding`."""
        skip = set(excluding)
        used = {r.object_ref for r in self._records.values() if r.document_id not in skip}
        return used & set(refs)

    async def tombstone(self, owner: str, at: datetime) -> datetime:
        """Keep the later of the old and the new time."""
        old = self._forgotten.get(owner)
        self._forgotten[owner] = max(old, at) if old is not None else at
        return self._forgotten[owner]

    async def forgotten_at(self, owner: str) -> datetime | None:
        """The tombstone, if any."""
        return self._forgotten.get(owner)
