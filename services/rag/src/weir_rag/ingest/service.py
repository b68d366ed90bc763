"""`ingest()`: one stored file → searchable chunks in both indexes, and its registry record.

Bad documents never raise: they become `IngestFailed` with a reason a person understands.
Infrastructure failures (embedder, index, registry down) do raise, so the consumer retries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

import structlog

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestCompleted, IngestFailed, IngestRequested
from weir_common.objects import ObjectNotFoundError, ObjectStore
from weir_common.search.documents import Chunk
from weir_common.search.lexical import LexicalIndex
from weir_rag.index.dense import DenseIndex
from weir_rag.ingest.chunks import content_hash, to_chunks
from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.pipeline import chunk_document, parse_bytes
from weir_rag.ingest.registry import Decision, DocumentInfo, DocumentRegistry
from weir_rag.ingest.switches import IngestLimits, IngestSwitches

log = structlog.get_logger(__name__)
Outcome = Literal["ingested", "unchanged", "replaced"]
_ODD_INPUT = (ValueError, TypeError, KeyError, IndexError, RecursionError, UnicodeError)


async def build_chunks(
    request: IngestRequested,
    data: bytes,
    switches: IngestSwitches,
    limits: IngestLimits,
) -> list[Chunk]:
    """Parse and chunk one file (no storage touched); raises IngestError for bad input."""
    fmt, doc = await parse_bytes(data, request.source, request.content_type, switches, limits)
    drafts = await chunk_document(doc, switches, limits)
    return to_chunks(
        drafts, document_id=request.document_id, source=request.source,
        collection=request.collection, owner=request.owner, fmt=fmt,
    )  # fmt: skip


async def embed_chunks(
    embedder: Embedder, chunks: Sequence[Chunk], batch: int
) -> list[list[float]]:
    """Vectors of the chunks' `semantic_text`, in batches."""
    vectors: list[list[float]] = []
    for start in range(0, len(chunks), batch):
        texts = [c.semantic_text for c in chunks[start : start + batch]]
        vectors.extend(await embedder.embed_documents(texts))
    return vectors


async def ingest(  # noqa: PLR0917 - the collaborators are the call's documented shape
    request: IngestRequested,
    store: ObjectStore,
    registry: DocumentRegistry,
    embedder: Embedder,
    dense: DenseIndex,
    lexical: LexicalIndex,
    switches: IngestSwitches | None = None,
    limits: IngestLimits | None = None,
) -> IngestCompleted | IngestFailed:
    """Load → registry decision → parse → chunk → embed → upsert → drop stale chunks → record."""
    switches, limits = switches or IngestSwitches(), limits or IngestLimits()
    bound = log.bind(document_id=request.document_id, source=request.source)
    started = time.monotonic()
    try:
        data = await store.get(request.object_ref)
    except ObjectNotFoundError as exc:
        return _failed(request, f"the stored file was not found: {exc}")
    info = DocumentInfo(
        request.document_id, request.source, request.collection, request.owner,
        content_hash(data), request.object_ref,
    )  # fmt: skip
    decision = await registry.decide(info, force=request.force)
    if decision is Decision.UNCHANGED:
        record = await registry.get(request.document_id)
        bound.info("ingest.unchanged", chunks=record.chunk_count if record else 0)
        return _completed(request, "unchanged", record.chunk_count if record else 0)
    try:
        chunks = await build_chunks(request, data, switches, limits)
    except IngestError as exc:
        reason = exc.reason
    except _ODD_INPUT as exc:  # a chunker bug on unusual input is still this document's failure
        bound.exception("ingest.chunking_crashed")
        reason = f"the document could not be processed: {type(exc).__name__}: {exc}"
    else:
        reason = ""
    if reason:
        await registry.mark_failed(info, reason)
        bound.warning("ingest.failed", reason=reason)
        return _failed(request, reason)
    vectors = await embed_chunks(embedder, chunks, limits.embed_batch)
    # New chunks first, stale ones after: a crash in between leaves both, never neither
    await dense.upsert(chunks, vectors)
    await lexical.upsert(chunks)
    if decision is Decision.CHANGED:
        await dense.delete_document(request.document_id, keep=chunks)
        await lexical.delete_document(request.document_id, keep=chunks)
    await registry.mark_ready(info, len(chunks))
    outcome: Outcome = "replaced" if decision is Decision.CHANGED else "ingested"
    bound.info("ingest.completed", outcome=outcome, chunks=len(chunks),
               duration_s=round(time.monotonic() - started, 3))  # fmt: skip
    return _completed(request, outcome, len(chunks))


def _completed(request: IngestRequested, outcome: Outcome, chunks: int) -> IngestCompleted:
    return IngestCompleted(
        **request.envelope(), document_id=request.document_id, source=request.source,
        outcome=outcome, chunks=chunks, job_id=request.job_id,
    )  # fmt: skip


def _failed(request: IngestRequested, reason: str) -> IngestFailed:
    return IngestFailed(
        **request.envelope(), document_id=request.document_id, source=request.source,
        reason=reason, job_id=request.job_id,
    )  # fmt: skip
