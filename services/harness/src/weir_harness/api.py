"""The harness's internal HTTP API: run records and "forget me" (the gateway calls it).

Callers are trusted services behind the service credential (`weir_common.service_auth`); the
gateway checks who may see which run before calling.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.encoders import jsonable_encoder

from weir_common.service_auth import Token, require_service_token
from weir_harness.repository import RunRepository


def make_router(repo: RunRepository, token: Token) -> APIRouter:
    """`GET /runs/{run_id}` and `DELETE /users/{user_id}/runs`, both requiring `token`."""
    router = APIRouter(tags=["runs"], dependencies=[require_service_token(token)])

    @router.get("/runs/{run_id}")
    async def run_record(run_id: str) -> dict[str, Any]:
        """The run record: status, state snapshot and every step with its payload."""
        found = await repo.record(run_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no run {run_id}")
        run, steps = found
        return {"run": run.model_dump(mode="json"), "steps": jsonable_encoder(steps)}

    @router.delete("/users/{user_id}/runs")
    async def forget_runs(user_id: str) -> dict[str, Any]:
        """ "Forget me": every run of the user, with the messages and context it recorded."""
        return {"user_id": user_id, "runs_deleted": await repo.forget_user(user_id)}

    return router
