"""Chat over HTTP with Server-Sent Events, with the event names of seed 002 (F06).

`POST /api/chat {"message": …, "conversation_id": …}` answers with an SSE stream:
`conversation_id`, `text` (pieces of the answer), `reset` (a generation restarted: discard the
text so far), `tool_call`, `tool_result`, `confirm` (a tool call waits for the user's approval:
answer with `POST /api/runs/{run_id}/confirm`), `done`, `error`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from weir_common.events import new_id
from weir_gateway.auth import Principal, http_principal
from weir_gateway.frames import CONVERSATION_ID
from weir_gateway.handlers import ChatStart, start_chat
from weir_gateway.quotas import QuotaExceededError
from weir_gateway.service import Frame, RunStream

router = APIRouter(prefix="/api", tags=["chat"])


class ChatBody(BaseModel):
    """One message; a new conversation when `conversation_id` is absent."""

    message: str = Field(min_length=1)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID)
    private: bool = False
    knowledge: bool = Field(default=True, description="Search the knowledge base this turn.")
    tools: bool = Field(default=True, description="Allow tool calls this turn.")


CONFIRM_FIELDS = ("run_id", "call_id", "tool", "arguments", "server", "expires_at", "reason")


def _sse(event: str, data: dict[str, object]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def to_sse(frame: Frame) -> str | None:
    """A reply frame in seed 002's SSE vocabulary (None: nothing to send)."""
    kind = frame["type"]
    if kind == "step":
        kind = {"action": "tool_call", "observation": "tool_result"}.get(frame["kind"], "")
    payload = {
        "delta": lambda: {"content": frame["text"]},
        "reset": lambda: {"attempt": frame["attempt"]},  # a generation restart: drop the text
        "tool_call": lambda: {"name": frame["tool"], "args": frame.get("arguments") or {}},
        "tool_result": lambda: {"name": frame["tool"], "result": frame["content"]},
        "confirm": lambda: {k: frame[k] for k in CONFIRM_FIELDS},
        "done": lambda: {"route": frame["route"], "offline": frame["offline"]},
        "error": lambda: {"message": frame["message"]},
    }.get(kind)
    if payload is None:
        return None
    return _sse("text" if kind == "delta" else kind, payload())


@router.post("/chat")
async def chat(
    body: ChatBody, request: Request, caller: Annotated[Principal, Depends(http_principal)]
) -> StreamingResponse:
    """Publish the message and stream its answer as SSE."""
    state = request.app.state
    if len(body.message) > state.settings.max_message_chars:
        limit = state.settings.max_message_chars
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"message exceeds {limit} chars")
    conversation = body.conversation_id or new_id()
    outbox: asyncio.Queue[Frame] = asyncio.Queue()
    stream = RunStream(new_id(), conversation, None)
    chat_start = ChatStart(
        caller.user_id, body.message, stream, body.private, body.knowledge, body.tools
    )
    try:
        await start_chat(
            chat_start,
            outbox,
            hub=state.hub,
            broker=state.broker,
            settings=state.settings,
            quotas=state.quotas,
        )
    except QuotaExceededError as exc:
        retry = {"Retry-After": str(int(exc.retry_after_s + 0.999))}
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, exc.reason, retry) from None

    async def events() -> AsyncIterator[str]:
        yield _sse("conversation_id", {"conversation_id": conversation, "run_id": stream.run_id})
        try:
            while True:
                frame = await outbox.get()
                text = to_sse(frame)
                if text is not None:
                    yield text
                if frame["type"] in ("done", "error"):
                    return
        finally:
            state.hub.forget(outbox)

    return StreamingResponse(events(), media_type="text/event-stream")
