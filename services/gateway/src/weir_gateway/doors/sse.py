"""The SSE door: chat over HTTP with Server-Sent Events, in seed 002's vocabulary (F06).

`POST /api/chat {"message": …, "conversation_id": …}` answers with an SSE stream:
`conversation_id`, `text` (pieces of the answer), `reset` (a generation restarted: discard the
text so far), `thought`, `tool_call`, `tool_result`, `sources` (what the knowledge base
returned), `confirm` (a tool call waits for the user's approval: answer with
`POST /api/runs/{run_id}/confirm`), `done`, `error`. The events are an encoding of the
neutral frames of `weir_gateway.stream`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from weir_common.events import new_id
from weir_gateway.auth import Principal, http_principal
from weir_gateway.frames import CONVERSATION_ID
from weir_gateway.quotas import QuotaExceededError
from weir_gateway.service import ChatStart, start_chat
from weir_gateway.stream import FINAL_KINDS, Frame, RunStream, kind_of

router = APIRouter(prefix="/api", tags=["chat"])


class ChatBody(BaseModel):
    """One message; a new conversation when `conversation_id` is absent."""

    message: str = Field(min_length=1)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID)
    private: bool = False
    knowledge: bool = Field(default=True, description="Search the knowledge base this turn.")
    tools: bool = Field(default=True, description="Allow tool calls this turn.")


CONFIRM_FIELDS = ("run_id", "call_id", "tool", "arguments", "server", "expires_at", "reason")


DROPPED = {
    "title": "the stream ends with `done`; the title comes after it: GET /api/conversations",
}
"""Frame kinds this door does not send, with why."""

_EVENTS: dict[str, tuple[str, Callable[[Frame], dict[str, object]]]] = {
    "delta": ("text", lambda f: {"content": f["text"]}),
    "reset": ("reset", lambda f: {"attempt": f["attempt"]}),  # drop the text so far
    "step.thought": ("thought", lambda f: {"content": f["content"]}),
    "step.action": ("tool_call", lambda f: {"name": f["tool"], "args": f.get("arguments") or {}}),
    "step.observation": ("tool_result", lambda f: {"name": f["tool"], "result": f["content"]}),
    "step.retrieval": ("sources", lambda f: {"sources": f.get("sources") or []}),
    "confirm": ("confirm", lambda f: {k: f[k] for k in CONFIRM_FIELDS}),
    "done": ("done", lambda f: {"route": f["route"], "offline": f["offline"]}),
    "error": ("error", lambda f: {"message": f["message"], "code": f.get("code")}),
}


def sse(event: str, data: dict[str, object]) -> str:
    """One Server-Sent Event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def encode(frame: Frame) -> str | None:
    """A frame in seed 002's SSE vocabulary (None: not sent on this door, see DROPPED)."""
    found = _EVENTS.get(kind_of(frame))
    if found is None:
        return None
    event, payload = found
    return sse(event, payload(frame))


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
        raise HTTPException(exc.status, exc.reason, retry) from None

    async def events() -> AsyncIterator[str]:
        yield sse("conversation_id", {"conversation_id": conversation, "run_id": stream.run_id})
        try:
            while True:
                frame = await outbox.get()
                text = encode(frame)
                if text is not None:
                    yield text
                if frame["type"] in FINAL_KINDS:
                    return
        finally:
            state.hub.forget(outbox)

    return StreamingResponse(events(), media_type="text/event-stream")
