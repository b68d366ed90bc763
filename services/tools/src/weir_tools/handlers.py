"""Thin handlers: a typed command in, the service called, a typed result out.

Handlers return their result instead of publishing it, so the caller publishes only after the
work succeeded. An error from the tool (or around it) is still a `ToolsCallCompleted`, with
`is_error`; only an unreadable result store becomes a transient `StepFailed`.
"""

from __future__ import annotations

import asyncio

import structlog

from weir_common.events import (
    StepFailed,
    ToolCallItem,
    ToolCallResult,
    ToolsCallCompleted,
    ToolsCallRequested,
)

from .models import CallRequest, CallResponse
from .repository import StoreError
from .service import ToolService

log = structlog.get_logger(__name__)


async def call_tool(cmd: ToolsCallRequested, tools: ToolService) -> ToolsCallCompleted | StepFailed:
    """Answer a `tools.call.requested`: its calls run concurrently, each under its own
    idempotency key, so a retried step replays the calls that already finished."""
    results = await asyncio.gather(
        *(_one(call, cmd, tools) for call in cmd.calls), return_exceptions=True
    )
    failed = next((r for r in results if isinstance(r, StoreError)), None)
    if failed is not None:
        log.warning("tools.store_failed", run_id=cmd.run_id, error=str(failed))
        return StepFailed(
            request_id=cmd.event_id,
            step=cmd.type,
            reason=str(failed),
            transient=True,
            **cmd.envelope(),
        )
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return ToolsCallCompleted(
        request_id=cmd.event_id,
        results=[r for r in results if isinstance(r, ToolCallResult)],
        **cmd.envelope(),
    )


async def _one(call: ToolCallItem, cmd: ToolsCallRequested, tools: ToolService) -> ToolCallResult:
    outcome = await tools.call(
        call.tool,
        call.arguments,
        timeout_s=cmd.timeout_s,
        idempotency_key=call.idempotency_key,
        user_id=cmd.user_id,
    )
    return ToolCallResult(
        tool=call.tool,
        arguments=call.arguments,
        content=outcome.content,
        is_error=outcome.is_error,
        duration_ms=outcome.duration_ms,
    )


async def call_direct(request: CallRequest, tools: ToolService) -> CallResponse:
    """Answer `POST /internal/call` (a `StoreError` is left to the HTTP edge)."""
    outcome = await tools.call(
        request.tool,
        request.arguments,
        timeout_s=request.timeout_s,
        idempotency_key=request.idempotency_key,
        user_id=request.user_id,
    )
    return CallResponse(
        tool=request.tool,
        content=outcome.content,
        is_error=outcome.is_error,
        duration_ms=outcome.duration_ms,
        replayed=outcome.replayed,
    )
