"""The memory API at the edge (F37, F38, seed 002): store, search, profile, delete by type,
plus listing, export and "forget me". The memory service owns memories, so every call goes
to its internal API; here only who may reach whom is decided: users reach their own
memories, admins anyone's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from pydantic import BaseModel, Field, SecretStr

from weir_common.settings import LayeredSettings
from weir_gateway.auth import Principal, http_principal
from weir_gateway.forget import forget_user
from weir_gateway.internal import InternalClient

Caller = Annotated[Principal, Depends(http_principal)]
MemoryType = Literal["profile", "semantic", "episodic"]


class MemoryApiSettings(LayeredSettings):
    """Where the memory service, the harness, and for "forget me" the knowledge and tools
    services listen (`WEIR_MEMORY_URL`, `WEIR_HARNESS_URL`, `WEIR_RAG_URL`,
    `WEIR_TOOLS_URL`, set by the launcher) and the credential they require."""

    service_name: ClassVar[str] = "gateway"

    weir_memory_url: str | None = Field(
        default=None, description="The memory service's internal API (set by the launcher)."
    )
    weir_harness_url: str | None = Field(
        default=None, description="The harness's internal API (set by the launcher)."
    )
    weir_rag_url: str | None = None
    weir_tools_url: str | None = Field(
        default=None, description="The tools service's internal API (set by the launcher)."
    )
    memory_api_timeout_s: float = Field(
        default=10.0, description="Limit of one call to another service's internal API."
    )
    weir_service_token: SecretStr = SecretStr("")


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = MemoryApiSettings()

    def client(name: str, url: str | None) -> InternalClient:
        return InternalClient(
            name, url, settings.memory_api_timeout_s, token=settings.weir_service_token
        )

    app.state.memory = client("the memory service", settings.weir_memory_url)
    app.state.runs = client("the harness", settings.weir_harness_url)
    app.state.forget_documents = client("the knowledge base", settings.weir_rag_url)
    app.state.forget_tools = client("the tools service", settings.weir_tools_url)
    clients = ("memory", "runs", "forget_documents", "forget_tools")
    try:
        yield
    finally:
        for name in clients:
            await getattr(app.state, name).close()


router = APIRouter(prefix="/api/memory", tags=["memory"], lifespan=_lifespan)


class StoreRequest(BaseModel):
    """A memory to keep; `user_id` defaults to the caller."""

    user_id: str | None = None
    content: str = Field(min_length=1, max_length=4000)
    category: str | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    type: Literal["semantic", "episodic"] = "semantic"


class SearchRequest(BaseModel):
    """A search of one user's memories; `user_id` defaults to the caller."""

    user_id: str | None = None
    query: str = Field(min_length=1, max_length=4000)
    top_k: int = Field(default=5, ge=1, le=50)


def _owner(caller: Principal, user_id: str | None) -> str:
    """The user whose memories are meant; 403 unless it is the caller or the caller is admin."""
    owner = user_id or caller.user_id
    caller.require_self_or_admin(owner)
    return owner


def _seg(value: str) -> str:
    """One path segment of the internal URL."""
    return quote(value, safe="")


async def _call(request: Request, method: str, path: str, **kwargs: Any) -> Any:
    return await request.app.state.memory.request(method, path, **kwargs)


@router.post("/store")
async def store(request: Request, caller: Caller, body: StoreRequest) -> Any:
    """Store a memory (the analyzer judges it unless an importance is given)."""
    payload = {**body.model_dump(exclude_none=True), "user_id": _owner(caller, body.user_id)}
    return await _call(request, "POST", "/memory/store", json=payload)


@router.post("/search")
async def search(request: Request, caller: Caller, body: SearchRequest) -> Any:
    """The best memories for a query."""
    payload = {**body.model_dump(), "user_id": _owner(caller, body.user_id)}
    return await _call(request, "POST", "/memory/search", json=payload)


@router.get("/profile/{user_id}")
async def profile(
    request: Request, caller: Caller, user_id: str, lang: Literal["zh", "en"] | None = None
) -> Any:
    """The user's profile and preference block."""
    params = {"lang": lang} if lang else {}
    return await _call(
        request, "GET", f"/memory/profile/{_seg(_owner(caller, user_id))}", params=params
    )


@router.get("/items/{user_id}")
async def items(
    request: Request,
    caller: Caller,
    user_id: str,
    type: Literal["semantic", "episodic"] | None = None,
) -> Any:
    """Everything remembered about the user (F38), or only memories of one type."""
    params = {"type": type} if type else {}
    path = f"/memory/items/{_seg(_owner(caller, user_id))}"
    return await _call(request, "GET", path, params=params)


@router.get("/export/{user_id}")
async def export(
    request: Request, caller: Caller, user_id: str, since: datetime | None = None
) -> Any:
    """Seed 001's nested, versioned export; incremental with `since`."""
    params = {"since": since.isoformat()} if since else {}
    return await _call(
        request, "GET", f"/memory/export/{_seg(_owner(caller, user_id))}", params=params
    )


@router.delete("/users/{user_id}")
async def forget(request: Request, caller: Caller, user_id: str) -> Any:
    """ "Forget me": every owner deletes what it holds of the user, in turn (see
    `weir_gateway.forget`); 503 naming the part that failed, and calling again finishes."""
    return await forget_user(request.app.state, _owner(caller, user_id))


@router.delete("/{kind}/{memory_id}")
async def delete(
    request: Request,
    caller: Caller,
    kind: MemoryType,
    memory_id: str,
    user_id: Annotated[str | None, Query()] = None,
) -> Any:
    """Delete one profile key or one semantic / episodic memory."""
    params = {"user_id": _owner(caller, user_id)}
    return await _call(request, "DELETE", f"/memory/{kind}/{_seg(memory_id)}", params=params)
