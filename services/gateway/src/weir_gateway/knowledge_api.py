"""Knowledge-base management at the edge (F15): upload, list, chunks, delete, reindex.

Uploads are stored first (object store) and published as `ingest.requested` with a reference;
the rag service owns documents and chunks, so reads go to its internal API. A user's own
uploads are private to them; the shared base is managed by admins.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any
from uuid import NAMESPACE_URL, uuid5

from fastapi import (
    APIRouter,
    Depends,
    File,
    Form,
    HTTPException,
    Query,
    Request,
    UploadFile,
    status,
)

from weir_common.bus import publish
from weir_common.events import IngestCompleted, IngestFailed, IngestRequested
from weir_gateway.auth import Principal, http_principal
from weir_gateway.quotas import QuotaExceededError

router = APIRouter(prefix="/api/knowledge", tags=["knowledge"])
Caller = Annotated[Principal, Depends(http_principal)]


def document_id(collection: str, owner: str | None, source: str) -> str:
    """Stable id of a document: the same file name uploaded again replaces it (incremental)."""
    return uuid5(NAMESPACE_URL, f"weir:{collection}:{owner or '*'}:{source}").hex


def _outcome(
    result: IngestCompleted | IngestFailed | None, doc: str, source: str
) -> dict[str, Any]:
    if result is None:
        return {"document_id": doc, "source": source, "status": "pending"}
    if isinstance(result, IngestFailed):
        return {"document_id": doc, "source": source, "status": "failed", "reason": result.reason}
    return {"document_id": doc, "source": source, "status": result.outcome, "chunks": result.chunks}


@router.post("/upload", status_code=status.HTTP_202_ACCEPTED)
async def upload(
    *,
    request: Request,
    caller: Caller,
    files: Annotated[list[UploadFile], File(description="Documents to ingest.")],
    shared: Annotated[bool, Form()] = False,
    collection: Annotated[str, Form(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = "default",
    wait: Annotated[bool, Query(description="Answer once ingestion has finished.")] = False,
) -> dict[str, Any]:
    """Store each file and request its ingestion; with `wait`, report how each one ended."""
    if shared:
        caller.require_admin()
    state = request.app.state
    settings = state.settings
    if collection != "default" and not caller.is_admin:
        found = await state.rag.request("GET", f"/internal/collections/{collection}")
        if not found["exists"]:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "only admins create collections")
    if len(files) > settings.max_upload_files:
        too_many = f"{len(files)} files in one upload (at most {settings.max_upload_files})"
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, too_many)
    try:
        await state.quotas.spend("upload", caller.user_id, cost=len(files))
    except QuotaExceededError as exc:
        retry = {"Retry-After": str(int(exc.retry_after_s + 0.999))}
        raise HTTPException(exc.status, exc.reason, retry) from None
    owner = None if shared else caller.user_id
    pending: list[tuple[str, str, asyncio.Future[IngestCompleted | IngestFailed] | None]] = []
    for upload_file in files:
        data = await upload_file.read(settings.max_upload_bytes + 1)
        if len(data) > settings.max_upload_bytes:
            too_big = f"{upload_file.filename} exceeds {settings.max_upload_bytes} bytes"
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, too_big)
        source = upload_file.filename or "upload"
        doc = document_id(collection, owner, source)
        waiter = state.hub.expect_ingest(doc) if wait else None
        event = IngestRequested(
            document_id=doc,
            source=source,
            object_ref=await state.objects.put(data),
            content_type=upload_file.content_type,
            owner=owner,
            collection=collection,
            reply_to=state.reply_topic,
            user_id=caller.user_id,
        )
        await publish(state.broker, settings.topics, event)
        pending.append((doc, source, waiter))
    results = []
    for doc, source, waiter in pending:
        outcome = None
        if waiter is not None:
            try:
                outcome = await asyncio.wait_for(waiter, settings.upload_wait_s)
            except TimeoutError:
                outcome = None
        results.append(_outcome(outcome, doc, source))
    return {"documents": results}


@router.get("/documents")
async def list_documents(
    request: Request,
    caller: Caller,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> Any:
    """Documents this user can see (shared and their own), newest first, paged."""
    params = {"user_id": caller.user_id, "offset": offset, "limit": limit}
    return await request.app.state.rag.request("GET", "/internal/documents", params=params)


@router.get("/documents/{doc}/chunks")
async def document_chunks(request: Request, caller: Caller, doc: str) -> Any:
    """The chunks of one visible document, as the retriever sees them."""
    params = {"user_id": caller.user_id}
    return await request.app.state.rag.request(
        "GET", f"/internal/documents/{doc}/chunks", params=params
    )


async def _managed(request: Request, caller: Principal, doc: str) -> dict[str, Any]:
    """The document, if the caller may change it: their own, or a shared one for an admin
    (404 for what they cannot see, 403 for a shared one they may only read)."""
    found: dict[str, Any] = await request.app.state.rag.request(
        "GET", f"/internal/documents/{doc}", params={"user_id": caller.user_id}
    )
    if found.get("owner") is None:
        caller.require_admin()
    return found


@router.delete("/documents/{doc}")
async def delete_document(request: Request, caller: Caller, doc: str) -> Any:
    """Delete a document and its chunks: the owner's own, or a shared one by an admin."""
    await _managed(request, caller, doc)
    return await request.app.state.rag.request("DELETE", f"/internal/documents/{doc}")


@router.post("/documents/{doc}/reindex", status_code=status.HTTP_202_ACCEPTED)
async def reindex(request: Request, caller: Caller, doc: str) -> dict[str, str]:
    """Ingest a stored document again, ignoring its content hash (the owner's own, or a
    shared one by an admin)."""
    state = request.app.state
    found = await _managed(request, caller, doc)
    event = IngestRequested(
        document_id=doc,
        source=found["source"],
        object_ref=found["object_ref"],
        owner=found.get("owner"),
        collection=found.get("collection", "default"),
        force=True,
        reply_to=state.reply_topic,
        user_id=caller.user_id,
    )
    await publish(state.broker, state.settings.topics, event)
    return {"document_id": doc, "status": "pending"}


@router.get("/permissions")
async def permissions(caller: Caller) -> dict[str, Any]:
    """What the caller may do with the knowledge base."""
    return {"user_id": caller.user_id, "role": caller.role, "can_manage_shared": caller.is_admin}
