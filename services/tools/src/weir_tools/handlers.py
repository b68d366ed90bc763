"""Thin handlers: a typed command in, the service called, a typed result out.

Handlers return their result instead of publishing it, so the caller publishes only after the
work succeeded. An error from the tool (or around it) is still a `ToolsCallCompleted`, with
`is_error`; only an unreadable result store becomes a transient `StepFailed`.
"""

from __future__ import annotations

import structlog

from weir_common.events import StepFailed, ToolsCallCompleted, ToolsCallRequested

from .models import CallRequest, CallResponse
from .repository import StoreError
from .service import ToolService

log = structlog.get_logger(__name__)


async def call_tool(cmd: ToolsCallRequested, tools: ToolService) -> ToolsCallCompleted | StepFailed:
    """Answer a `tools.call.requested` with the tool's result."""
    try:
        outcome = await tools.call(
            cmd.tool,
            cmd.arguments,
            timeout_s=cmd.timeout_s,
            idempotency_key=cmd.idempotency_key,
            user_id=cmd.user_id,
        )
    except StoreError as exc:
        log.warning("tools.store_failed", run_id=cmd.run_id, tool=cmd.tool, error=str(exc))
        return StepFailed(
            request_id=cmd.event_id,
            step=cmd.type,
            reason=str(exc),
            transient=True,
            **cmd.envelope(),
        )
    return ToolsCallCompleted(
        request_id=cmd.event_id,
        tool=cmd.tool,
        content=outcome.content,
        is_error=outcome.is_error,
        duration_ms=outcome.duration_ms,
        **cmd.envelope(),
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
