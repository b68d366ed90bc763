"""The memory service's internal HTTP API (the gateway's `/api/memory/...` calls it).

Callers are trusted services: the gateway checks who may reach which user before calling.
The app includes these routes behind the service credential (`weir_common.service_auth`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from .admin import MemoryAdmin, MemoryType
from .longterm.models import Category, Clock, Layer
from .repository import ShortTermStore, StoreError

T = TypeVar("T")


class StoreBody(BaseModel):
    """A memory to store (seed 002: `{"user_id": "...", "content": "..."}`)."""

    user_id: str = Field(min_length=1)
    content: str = Field(min_length=1, max_length=4000)
    category: Category | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    type: Layer = Layer.SEMANTIC


class SearchBody(BaseModel):
    """A memory search (seed 002: `{"user_id": "...", "query": "...", "top_k": 5}`)."""

    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=4000)
    top_k: int = Field(default=5, ge=1, le=50)


def make_router(
    admin: Callable[[], MemoryAdmin | None], clock: Clock, short_term: Callable[[], ShortTermStore]
) -> APIRouter:
    """Routes under `/memory`; `admin` is None while long-term memory is off (then only
    "forget me" works: it clears the short-term conversations)."""
    router = APIRouter(prefix="/memory", tags=["memory"])

    def ops() -> MemoryAdmin:
        found = admin()
        if found is None:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "long-term memory is off")
        return found

    async def guarded(call: Awaitable[T]) -> T:
        try:
            return await call
        except StoreError as exc:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from exc

    @router.post("/store")
    async def store(body: StoreBody) -> dict[str, Any]:
        return await guarded(ops().store(
            body.user_id, body.content, category=body.category, importance=body.importance,
            layer=body.type, at=clock(),
        ))  # fmt: skip

    @router.post("/search")
    async def search(body: SearchBody) -> dict[str, Any]:
        results = await guarded(ops().search(body.user_id, body.query, body.top_k))
        return {"user_id": body.user_id, "results": results}

    @router.get("/profile/{user_id}")
    async def profile(user_id: str, lang: str | None = None) -> dict[str, Any]:
        return await guarded(ops().profile(user_id, lang))

    @router.get("/items/{user_id}")
    async def items(user_id: str, type: Layer | None = None) -> dict[str, Any]:
        return await guarded(ops().everything(user_id, type))

    @router.get("/export/{user_id}")
    async def export(user_id: str, since: datetime | None = None) -> dict[str, Any]:
        return await guarded(ops().export(user_id, since, clock()))

    @router.delete("/users/{user_id}")
    async def forget(user_id: str) -> dict[str, Any]:
        if admin() is None:  # long-term memory off: nothing but conversations to delete
            conversations = await guarded(short_term().forget_user(user_id))
            deleted = {"conversations": conversations}
            return {"user_id": user_id, "forgotten_at": clock().isoformat(),
                    "deleted": deleted, "long_term": "off"}  # fmt: skip
        tombstone, deleted = await guarded(ops().forget(user_id, clock()))
        return {"user_id": user_id, "forgotten_at": tombstone.isoformat(), "deleted": deleted}

    @router.delete("/{kind}/{memory_id}")
    async def delete(
        kind: MemoryType, memory_id: str, user_id: Annotated[str, Query(min_length=1)]
    ) -> dict[str, Any]:
        if not await guarded(ops().delete(user_id, kind, memory_id)):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {kind} {memory_id!r}")
        return {"deleted": True, "type": kind, "id": memory_id}

    return router
