"""The memory service's internal conversations API (F07); the gateway's
`/api/conversations` calls it after deciding who the caller is.

`conversation_id` is the bus-wide id (the gateway derives it from the user and the client's
id), `client_id` the id the client knows and is shown back. Another user's id is simply not
found: every query names the user.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from .conversations.repository import Conversation
from .conversations.service import Conversations
from .longterm.models import Clock
from .repository import StoreError

T = TypeVar("T")
ID = r"^[A-Za-z0-9_.:-]{1,128}$"


class CreateBody(BaseModel):
    """A conversation to create; without a title it gets the automatic one."""

    user_id: str = Field(min_length=1)
    conversation_id: str = Field(pattern=ID)
    client_id: str = Field(pattern=ID)
    title: str = Field(default="", max_length=200)


class RenameBody(BaseModel):
    """A title the user chose."""

    title: str = Field(min_length=1, max_length=200)


def make_conversations_router(
    conversations: Callable[[], Conversations | None], clock: Clock
) -> APIRouter:
    """Routes under `/conversations`; 503 while long-term memory (PostgreSQL) is off."""
    router = APIRouter(prefix="/conversations", tags=["conversations"])

    async def call(use: Callable[[Conversations], Awaitable[T]]) -> T:
        found = conversations()
        if found is None:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "conversations are off")
        try:
            return await use(found)
        except StoreError as exc:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from exc

    def found(conversation: Conversation | None) -> Conversation:
        if conversation is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no such conversation")
        return conversation

    @router.post("", status_code=status.HTTP_201_CREATED)
    async def create(body: CreateBody) -> dict[str, Any]:
        title = body.title.strip()
        made = await call(
            lambda c: c.create(body.user_id, body.conversation_id, body.client_id, title, clock())
        )
        return found(made).public()

    @router.get("/{user_id}")
    async def listing(
        user_id: str,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        before: Annotated[str | None, Query(max_length=200)] = None,
    ) -> dict[str, Any]:
        try:
            page, next_cursor = await call(lambda c: c.page(user_id, limit, before))
        except ValueError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "bad cursor") from exc
        return {"conversations": [c.public() for c in page], "next": next_cursor}

    @router.get("/{user_id}/{conversation_id}")
    async def one(user_id: str, conversation_id: str) -> dict[str, Any]:
        conversation = found(await call(lambda c: c.store.get(user_id, conversation_id)))
        turns = await call(lambda c: c.store.turns(user_id, conversation_id))
        messages = [m for t in turns for m in t.messages()]
        return {"conversation": conversation.public(), "messages": messages}

    @router.patch("/{user_id}/{conversation_id}")
    async def rename(user_id: str, conversation_id: str, body: RenameBody) -> dict[str, Any]:
        title = body.title.strip()
        if not title:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "empty title")
        return found(await call(lambda c: c.rename(user_id, conversation_id, title))).public()

    @router.delete("/{user_id}/{conversation_id}")
    async def delete(user_id: str, conversation_id: str) -> dict[str, bool]:
        """Idempotent: `deleted` says whether there was one to delete."""
        return {"deleted": await call(lambda c: c.delete(user_id, conversation_id, clock()))}

    return router
