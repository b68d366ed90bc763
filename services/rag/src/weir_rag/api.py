"""The knowledge service's internal HTTP API: what the gateway and the tools service read.

The app includes these routes behind the service credential (`weir_common.service_auth`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, status
from pydantic import BaseModel, Field

from weir_rag.ingest import DocumentRecord
from weir_rag.service import Knowledge

router = APIRouter(prefix="/internal", tags=["internal"])


def _knowledge(request: Request) -> Knowledge:
    knowledge: Knowledge = request.app.state.knowledge
    return knowledge


def _doc(record: DocumentRecord) -> dict[str, Any]:
    return {
        "document_id": record.document_id,
        "source": record.source,
        "collection": record.collection,
        "owner": record.owner,
        "chunks": record.chunk_count,
        "status": record.status,
        "error": record.error,
        "object_ref": record.object_ref,
        "updated_at": record.updated_at.isoformat(),
    }


@router.get("/documents")
async def documents(
    request: Request,
    user_id: str | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """A page of the documents `user_id` can see (shared and their own)."""
    page, total = await _knowledge(request).documents(user_id, offset, limit)
    return {"items": [_doc(r) for r in page], "total": total, "offset": offset, "limit": limit}


@router.get("/collections/{collection}")
async def collection(request: Request, collection: str) -> dict[str, Any]:
    """Whether a collection exists (holds a document, shared or anyone's)."""
    found = await _knowledge(request).registry.list(collection=collection, limit=1)
    return {"collection": collection, "exists": bool(found)}


@router.get("/documents/{document_id}")
async def document(request: Request, document_id: str, user_id: str | None = None) -> Any:
    """One document, if `user_id` may see it."""
    record = await _knowledge(request).visible(document_id, user_id)
    if record is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id}")
    return _doc(record)


@router.get("/documents/{document_id}/chunks")
async def chunks(request: Request, document_id: str, user_id: str | None = None) -> Any:
    """The chunks of a visible document, in order, as they are indexed."""
    knowledge = _knowledge(request)
    if await knowledge.visible(document_id, user_id) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id}")
    found = await knowledge.dense.chunks_of(document_id)
    items = [
        {
            "chunk_id": c.chunk_id,
            "index": c.chunk_index,
            "locator": c.locator,
            "semantic_text": c.semantic_text,
            "raw_content": c.raw_content,
        }
        for c in found
    ]
    return {"document_id": document_id, "items": items}


@router.delete("/documents/{document_id}")
async def delete(request: Request, document_id: str) -> dict[str, Any]:
    """Remove a document and its chunks (the gateway checks the admin role)."""
    knowledge = _knowledge(request)
    if await knowledge.registry.get(document_id) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id}")
    return {"document_id": document_id, "deleted_chunks": await knowledge.delete(document_id)}


@router.delete("/users/{user_id}/documents")
async def forget_user(
    request: Request, user_id: str, forgotten_at: datetime | None = None
) -> dict[str, Any]:
    """ "Forget me": the user's private documents (records, chunks in both indexes, stored
    files no other document uses) are deleted, and ingestions of theirs requested until
    `forgotten_at` (default: now; the gateway passes memory's tombstone) are refused.
    Idempotent: calling again finishes an interrupted forget."""
    at = forgotten_at or datetime.now(UTC)
    if at.tzinfo is None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "forgotten_at needs a zone")
    return {"user_id": user_id, **await _knowledge(request).forget_user(user_id, at)}


class SearchBody(BaseModel):
    """A direct search (the knowledge_search tool)."""

    query: str = Field(min_length=1)
    top_k: int = Field(default=5, ge=1, le=50)
    user_id: str | None = None
    collection: str = "default"


@router.post("/search")
async def search(request: Request, body: SearchBody) -> dict[str, Any]:
    """Passages for a query, shared base plus the user's own documents."""
    passages = await _knowledge(request).search(
        body.query, body.top_k, body.user_id, body.collection
    )
    return {"passages": [p.model_dump() for p in passages]}
