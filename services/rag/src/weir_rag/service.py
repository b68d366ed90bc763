"""The knowledge service's logic: ingest a document, retrieve passages, manage documents.

No broker here: handlers turn events into these calls and publish what they return.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from weir_common.embeddings import Embedder
from weir_common.events import (
    IngestCompleted,
    IngestFailed,
    IngestRequested,
    Passage,
    RagRetrieveCompleted,
    RagRetrieveRequested,
)
from weir_common.objects import ObjectNotFoundError, ObjectStore
from weir_common.search.documents import Scope
from weir_common.search.lexical import LexicalIndex
from weir_rag.forget import REFUSED_REASON, orphaned, refused
from weir_rag.index.dense import DenseIndex
from weir_rag.ingest import DocumentRecord, DocumentRegistry, ingest
from weir_rag.retrieve.pipeline import Retriever, to_passage

log = structlog.get_logger(__name__)


@dataclass
class Knowledge:
    """Everything the knowledge service works with, wired once at start-up."""

    store: ObjectStore
    registry: DocumentRegistry
    embedder: Embedder
    dense: DenseIndex
    lexical: LexicalIndex
    retriever: Retriever
    ingest_timeout_s: float = 600.0

    async def ingest(self, request: IngestRequested) -> IngestCompleted | IngestFailed:
        """Ingest one document. A bad document or one over the time limit is an
        `ingest.failed` with a reason; an engine failure (index, registry, embedder, store)
        raises, so the bus retries the request instead of reporting a permanent failure.

        A private document requested before its owner was forgotten is refused (a permanent
        `ingest.failed`, logged): whatever of it exists is deleted, its file too. The check
        is repeated after ingesting, for a forget that ran meanwhile."""
        if await self._refused(request):
            return self._failed(request, REFUSED_REASON)
        try:
            outcome = await asyncio.wait_for(
                ingest(request, self.store, self.registry, self.embedder, self.dense, self.lexical),
                self.ingest_timeout_s,
            )
        except TimeoutError:
            reason = f"ingestion took longer than {self.ingest_timeout_s:g} s and was stopped"
            return self._failed(request, reason)
        if await self._refused(request):
            return self._failed(request, REFUSED_REASON)
        return outcome

    async def _refused(self, request: IngestRequested) -> bool:
        if request.owner is None:
            return False
        if not refused(request, await self.registry.forgotten_at(request.owner)):
            return False
        log.warning("ingest.refused_forgotten", document_id=request.document_id,
                    owner=request.owner, requested_at=request.occurred_at.isoformat())  # fmt: skip
        record = await self.registry.get(request.document_id)
        if record is None or record.owner == request.owner:
            await self._drop_files([request.object_ref], [request.document_id])
            await self.delete(request.document_id)
        return True

    @staticmethod
    def _failed(request: IngestRequested, reason: str) -> IngestFailed:
        return IngestFailed(
            document_id=request.document_id,
            source=request.source,
            reason=reason,
            job_id=request.job_id,
            **request.envelope(),
        )

    async def search(
        self, query: str, top_k: int, user_id: str | None, collection: str = "default"
    ) -> list[Passage]:
        """Passages from the shared base and `user_id`'s own documents, best first (none, and
        no query embedded, when the user can see no document of the collection)."""
        if not await self.registry.any_searchable(collection, user_id):
            return []
        scope = Scope(collection=collection, user_id=user_id)
        hits = await self.retriever.search(query, top_k, scope)
        dual = self.retriever.switches.dual_storage
        return [to_passage(hit, dual) for hit in hits]

    async def retrieve(self, cmd: RagRetrieveRequested) -> RagRetrieveCompleted:
        """Answer the harness's retrieval step."""
        passages = await self.search(cmd.query, cmd.top_k, cmd.user_id, cmd.collection)
        return RagRetrieveCompleted(request_id=cmd.event_id, passages=passages, **cmd.envelope())

    async def visible(self, document_id: str, user_id: str | None) -> DocumentRecord | None:
        """The document if `user_id` may see it (None: unknown or someone else's)."""
        record = await self.registry.get(document_id)
        return record if record is not None and record.visible_to(user_id) else None

    async def documents(
        self, user_id: str | None, offset: int, limit: int, collection: str | None = None
    ) -> tuple[list[DocumentRecord], int]:
        """A page of the documents `user_id` can see, and how many there are."""
        seen: list[DocumentRecord] = []
        after: str | None = None
        while True:
            batch = await self.registry.list(collection, after, 500)
            seen += [r for r in batch if r.visible_to(user_id)]
            if len(batch) < 500:
                break
            after = batch[-1].document_id
        seen.sort(key=lambda r: r.updated_at, reverse=True)
        return seen[offset : offset + limit], len(seen)

    async def delete(self, document_id: str) -> int:
        """Remove a document's chunks from both indexes and its record; chunks removed."""
        removed = await self.dense.delete_document(document_id)
        await self.lexical.delete_document(document_id)
        await self.registry.delete(document_id)
        return removed

    async def forget_user(self, user_id: str, at: datetime) -> dict[str, Any]:
        """ "Forget me": record the user's tombstone (`at`), then delete every private
        document of theirs: its stored file unless another document uses it, its chunks in
        both indexes, its record (last, so calling again finishes an interrupted forget)."""
        tombstone = await self.registry.tombstone(user_id, at)
        records = await self.registry.owned_by(user_id)
        ids = [r.document_id for r in records]
        files = await self._drop_files([r.object_ref for r in records], ids)
        chunks = 0
        for document_id in ids:
            chunks += await self.delete(document_id)
        log.info("rag.user_forgotten", user_id=user_id, documents=len(ids), chunks=chunks,
                 files=files, forgotten_at=tombstone.isoformat())  # fmt: skip
        return {"forgotten_at": tombstone.isoformat(), "documents": len(ids),
                "chunks": chunks, "files": files}  # fmt: skip

    async def _drop_files(self, refs: Sequence[str], documents: Sequence[str]) -> int:
        """Delete those stored files that no document but `documents` uses; how many went."""
        in_use = await self.registry.refs_in_use([r for r in refs if r], documents)
        gone = 0
        for ref in orphaned(refs, in_use):
            try:
                gone += await self.store.delete(ref)
            except ObjectNotFoundError:  # a ref of another store: nothing of ours to delete
                log.warning("rag.foreign_object_ref", ref=ref)
        return gone
