"""The harness's internal HTTP API: run records and "forget me" (the gateway calls it).

Callers are trusted services behind the service credential (`weir_common.service_auth`); the
gateway checks who may see which run before calling.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel, Field

from weir_common.service_auth import Token, require_service_token
from weir_harness.confirmation import PolicyDecision
from weir_harness.repository import RunStore
from weir_harness.run_list import MAX_LIMIT, CursorError, RunQuery
from weir_harness.timeline import timeline


class ToolPolicy(BaseModel):
    """A user's standing answer for a tool (weir_harness.confirmation)."""

    tool: str = Field(min_length=1, max_length=200, description="A tool name, or * for all.")
    decision: PolicyDecision
    conversation_id: str | None = Field(
        default=None, description="The harness's conversation id; null: every conversation."
    )
    client_conversation_id: str | None = Field(
        default=None, max_length=128, description="The client's own id of that conversation."
    )


def make_router(repo: RunStore, token: Token) -> APIRouter:
    """`GET /runs`, `GET /runs/{run_id}` and `DELETE /users/{user_id}/runs`, all requiring
    `token`."""
    router = APIRouter(tags=["runs"], dependencies=[require_service_token(token)])

    @router.get("/runs")
    async def list_runs(
        *,
        user: str | None = None,
        conversation: str | None = None,
        status: Annotated[list[str] | None, Query()] = None,
        verdict: str | None = None,
        since: datetime | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
        before: str | None = None,
    ) -> dict[str, Any]:
        """Runs, recent first, filtered; `next` is the `before` of the following page."""
        query = RunQuery(user=user, conversation=conversation, status=status or [],
                         verdict=verdict, since=since, limit=limit, before=before)  # fmt: skip
        try:
            runs, after = await repo.list_runs(query)
        except CursorError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        return {"runs": jsonable_encoder(runs), "next": after}

    @router.get("/runs/{run_id}")
    async def run_record(run_id: str) -> dict[str, Any]:
        """The run record: status, state snapshot, every step with its payload, and the
        record columns: created_at, ended_at, diagnosis, verdict, timeline."""
        found = await repo.record(run_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no run {run_id}")
        run, steps = found
        outcome = await repo.outcome(run_id) or {}
        return {
            "run": run.model_dump(mode="json"),
            "steps": jsonable_encoder(steps),
            **jsonable_encoder(outcome),
            "timeline": jsonable_encoder(timeline(steps)),
        }

    @router.get("/users/{user_id}/tool-policies")
    async def list_policies(user_id: str) -> dict[str, Any]:
        """The user's tool policies (conversation_id null: every conversation)."""
        return {"user_id": user_id, "policies": jsonable_encoder(await repo.policies(user_id))}

    @router.put("/users/{user_id}/tool-policies")
    async def put_policy(user_id: str, policy: ToolPolicy) -> dict[str, Any]:
        """Set one tool policy of the user (replacing the one for the same tool and scope)."""
        await repo.put_policy(user_id, policy.conversation_id, policy.tool, policy.decision,
                              policy.client_conversation_id)  # fmt: skip
        return {"user_id": user_id, **policy.model_dump()}

    @router.delete("/users/{user_id}/tool-policies")
    async def delete_policy(
        user_id: str, tool: str, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """Remove one tool policy of the user."""
        deleted = await repo.delete_policy(user_id, conversation_id, tool)
        return {"user_id": user_id, "tool": tool, "conversation_id": conversation_id,
                "deleted": deleted}  # fmt: skip

    @router.delete("/users/{user_id}/runs")
    async def forget_runs(user_id: str) -> dict[str, Any]:
        """ "Forget me": every run of the user, with the messages and context it recorded."""
        return {"user_id": user_id, "runs_deleted": await repo.forget_user(user_id)}

    return router
