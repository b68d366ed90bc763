"""The OpenAI-compatible door: `POST /v1/chat/completions` and `GET /v1/models`.

Programs that speak the OpenAI chat API (the `openai` SDKs, LangChain, chat front ends) use
weir by pointing their base URL at `<gateway>/v1` and their API key at a weir bearer token:
the caller is identified exactly as on the rest of the gateway. `model` names a weir profile
(`weir-chat`, `weir-rag`, `weir-agent`, or `weir`). The turn is an ordinary run: memory,
quotas, the run record and its trace are the same as for the web UI.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from weir_common.events import new_id
from weir_gateway.auth import Principal, http_principal
from weir_gateway.doors.openai_frames import ERROR_STATUS, Completion, error_chunk
from weir_gateway.doors.openai_wire import PROFILES, CompletionRequest, error_body
from weir_gateway.quotas import QuotaExceededError
from weir_gateway.service import ChatStart, start_chat
from weir_gateway.stream import FINAL_KINDS, Frame, RunStream

router = APIRouter(prefix="/v1", tags=["openai"])


class OpenAIError(Exception):
    """A request refused before its run starts, answered in OpenAI's error shape."""

    def __init__(self, status_code: int, body: dict[str, Any],
                 headers: Mapping[str, str] | None = None) -> None:  # fmt: skip
        super().__init__(body["error"]["message"])
        self.status_code, self.body = status_code, body
        self.headers = dict(headers) if headers else None

    def response(self) -> JSONResponse:
        """The error as an HTTP response."""
        return JSONResponse(self.body, self.status_code, headers=self.headers)


async def _caller(request: Request) -> Principal:
    try:
        return await http_principal(request)
    except HTTPException as exc:
        body = error_body(str(exc.detail), "invalid_request_error", "invalid_api_key")
        raise OpenAIError(exc.status_code, body, exc.headers) from None


@router.get("/models", response_model=None)
async def models(request: Request) -> Response:
    """The weir profiles a client may name as `model`."""
    try:
        await _caller(request)
    except OpenAIError as exc:
        return exc.response()
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "weir",
             "description": profile.description} for name, profile in PROFILES.items()]  # fmt: skip
    return JSONResponse({"object": "list", "data": data})


@router.post("/chat/completions", response_model=None)
async def chat_completions(request: Request) -> Response:
    """One turn: the last user message of `messages`, answered whole or as chunks."""
    try:
        caller = await _caller(request)
        body = _request(await request.body())
        outbox, completion = await _start(request, caller, body)
    except OpenAIError as exc:
        return exc.response()
    hub = request.app.state.hub
    if body.stream:
        return StreamingResponse(_chunks(outbox, completion, hub), media_type="text/event-stream")
    try:
        return await _whole(outbox, completion)
    finally:
        hub.forget(outbox)


def _request(raw: bytes) -> CompletionRequest:
    try:
        body = CompletionRequest.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        refused = error_body(f"{where}: {err['msg']}", "invalid_request_error",
                             "invalid_request", where or None)  # fmt: skip
        raise OpenAIError(400, refused) from None
    if body.model not in PROFILES:
        known = ", ".join(PROFILES)
        message = f"no model {body.model!r}; weir serves {known}"
        raise OpenAIError(404, error_body(message, "invalid_request_error", "model_not_found",
                                          "model"))  # fmt: skip
    try:
        body.question()
    except ValueError as exc:
        refused = error_body(str(exc), "invalid_request_error", "invalid_request", "messages")
        raise OpenAIError(400, refused) from None
    return body


async def _start(
    request: Request, caller: Principal, body: CompletionRequest
) -> tuple[asyncio.Queue[Frame], Completion]:
    state = request.app.state
    text = body.question()
    if len(text) > state.settings.max_message_chars:
        limit = state.settings.max_message_chars
        refused = error_body(f"message exceeds {limit} chars", "invalid_request_error",
                             "message_too_large", "messages")  # fmt: skip
        raise OpenAIError(400, refused)
    profile = PROFILES[body.model]
    stream = RunStream(new_id(), body.conversation(), None)
    outbox: asyncio.Queue[Frame] = asyncio.Queue()
    chat = ChatStart(caller.user_id, text, stream, body.private, profile.knowledge,
                     profile.tools, body.model)  # fmt: skip
    try:
        await start_chat(chat, outbox, hub=state.hub, broker=state.broker,
                         settings=state.settings, quotas=state.quotas)  # fmt: skip
    except QuotaExceededError as exc:
        retry = {"Retry-After": str(int(exc.retry_after_s + 0.999))}
        kind = (
            "rate_limit_error"
            if exc.status == status.HTTP_429_TOO_MANY_REQUESTS
            else "server_error"
        )
        raise OpenAIError(exc.status, error_body(exc.reason, kind, exc.code), retry) from None
    return outbox, Completion(stream.run_id, stream.conversation_id, body.model)


async def _whole(outbox: asyncio.Queue[Frame], completion: Completion) -> Response:
    while True:
        frame = await outbox.get()
        completion.encode(frame)  # gathers the steps
        if frame["type"] in ("done", "confirm"):
            return JSONResponse(completion.whole(frame))
        if frame["type"] == "error":
            code = ERROR_STATUS.get(frame.get("code") or "", 502)
            return JSONResponse(error_chunk(frame), code)


async def _chunks(
    outbox: asyncio.Queue[Frame], completion: Completion, hub: Any
) -> AsyncIterator[str]:
    try:
        yield _data(completion.first())
        while True:
            frame = await outbox.get()
            chunk = completion.encode(frame)
            if chunk is not None:
                yield _data(chunk)
            if frame["type"] in FINAL_KINDS:
                if frame["type"] == "done":
                    yield "data: [DONE]\n\n"
                return
    finally:
        hub.forget(outbox)


def _data(chunk: dict[str, Any]) -> str:
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
