"""Conversations at the edge (F07): a user's own conversations, listed, read, renamed and
deleted. The memory service owns them; here the caller's id is the owner, and a client's
conversation id becomes the bus-wide id the way chat does (`internal_conversation_id`), so
another user's id is simply not found: the same 404 as an id that does not exist.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request, Response, status
from pydantic import BaseModel, Field

from weir_common.events import new_id
from weir_gateway.auth import Principal, http_principal
from weir_gateway.frames import CONVERSATION_ID
from weir_gateway.service import internal_conversation_id

Caller = Annotated[Principal, Depends(http_principal)]
ConversationId = Annotated[str, Path(pattern=CONVERSATION_ID)]


router = APIRouter(prefix="/api/conversations", tags=["conversations"])


class CreateRequest(BaseModel):
    """A new conversation; without a title it gets the automatic one after its first turn."""

    title: str | None = Field(default=None, max_length=200)


class RenameRequest(BaseModel):
    """The title the user chose (an automatic title never replaces it)."""

    title: str = Field(min_length=1, max_length=200)


def _path(caller: Principal, conversation_id: str) -> str:
    bus_id = internal_conversation_id(caller.user_id, conversation_id)
    return f"/conversations/{quote(caller.user_id, safe='')}/{bus_id}"


async def _call(request: Request, method: str, path: str, **kwargs: Any) -> Any:
    """Through the memory service's client (`memory_api` opens and closes it)."""
    return await request.app.state.memory.request(method, path, **kwargs)


@router.post("", status_code=status.HTTP_201_CREATED)
async def create(request: Request, caller: Caller, body: CreateRequest | None = None) -> Any:
    """Start a conversation; chat on it with its `conversation_id`."""
    client_id = new_id()
    payload = {
        "user_id": caller.user_id,
        "conversation_id": internal_conversation_id(caller.user_id, client_id),
        "client_id": client_id,
        "title": (body.title or "").strip() if body else "",
    }
    return await _call(request, "POST", "/conversations", json=payload)


@router.get("")
async def listing(
    request: Request,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    before: Annotated[str | None, Query(max_length=200)] = None,
) -> Any:
    """The caller's conversations, most recently active first; `next` is the `before` of
    the following page (null on the last)."""
    params: dict[str, Any] = {"limit": limit, **({"before": before} if before else {})}
    path = f"/conversations/{quote(caller.user_id, safe='')}"
    return await _call(request, "GET", path, params=params)


@router.get("/{conversation_id}")
async def one(request: Request, caller: Caller, conversation_id: ConversationId) -> Any:
    """One conversation and its messages, oldest first."""
    return await _call(request, "GET", _path(caller, conversation_id))


@router.patch("/{conversation_id}")
async def rename(
    request: Request, caller: Caller, conversation_id: ConversationId, body: RenameRequest
) -> Any:
    """Rename a conversation."""
    return await _call(request, "PATCH", _path(caller, conversation_id), json=body.model_dump())


@router.delete("/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete(request: Request, caller: Caller, conversation_id: ConversationId) -> Response:
    """Delete a conversation and what memory keeps of it; deleting again is no error."""
    await _call(request, "DELETE", _path(caller, conversation_id))
    return Response(status_code=status.HTTP_204_NO_CONTENT)
