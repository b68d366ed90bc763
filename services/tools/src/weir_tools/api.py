"""HTTP routes of the tools service (behind the service credential): the catalogue, direct
calls, and "forget me"."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException

from weir_common.service_auth import Token, require_service_token

from .models import CallRequest, CallResponse
from .repository import StoreError
from .service import ToolService


def add_routes(app: FastAPI, service: ToolService, token: Token) -> None:
    """`GET /internal/catalog` and `POST /internal/call`, for direct calls and benchmarks,
    and `DELETE /internal/users/{user_id}/calls` ("forget me"); all behind the service
    credential `token`."""
    router = APIRouter(prefix="/internal", dependencies=[require_service_token(token)])

    @router.get("/catalog")
    async def catalog() -> dict[str, Any]:
        """The current catalogue: tools and the state of every server."""
        current = service.catalog()
        return current.model_dump(mode="json", include={"tools", "servers"})

    @router.post("/call")
    async def call(request: CallRequest) -> CallResponse:
        """Call one tool and wait for its result."""
        try:
            outcome = await service.call(
                request.tool,
                request.arguments,
                timeout_s=request.timeout_s,
                idempotency_key=request.idempotency_key,
                user_id=request.user_id,
            )
        except StoreError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc
        return CallResponse(
            tool=request.tool,
            content=outcome.content,
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
            replayed=outcome.replayed,
        )

    @router.delete("/users/{user_id}/calls")
    async def forget_calls(user_id: str) -> dict[str, Any]:
        """ "Forget me": the user's stored call results and in-progress markers."""
        try:
            return {"user_id": user_id, "calls_deleted": await service.forget_user(user_id)}
        except StoreError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc

    app.include_router(router)
