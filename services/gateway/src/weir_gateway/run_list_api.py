"""The list of runs (F41): `GET /api/runs?user=&conversation=&status=&verdict=&since=&limit=&
before=`, recent first, in pages. A user sees only their own runs (naming someone else is
403); an admin may list anyone's, or everyone's. The harness owns the records.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from pydantic import BaseModel, Field

from weir_gateway.auth import Principal, http_principal_with_user_filter
from weir_gateway.runs_api import CLIENT_STATUS, ClientStatus, Diagnosis, Verdict

router = APIRouter(prefix="/api/runs", tags=["runs"])
# `?user=` here filters the list (a user may name only themselves): it is no identity
Caller = Annotated[Principal, Depends(http_principal_with_user_filter)]
# a client's run status as the harness's states (the inverse of `CLIENT_STATUS`)
_STATES: dict[ClientStatus, list[str]] = {}
for _state, _client in CLIENT_STATUS.items():
    _STATES.setdefault(_client, []).append(_state)


class RunSummary(BaseModel):
    """One run in a list."""

    run_id: str
    user_id: str | None
    conversation_id: str
    status: ClientStatus
    created_at: datetime
    ended_at: datetime | None = None
    route: str | None = None
    intent: str | None = None
    diagnosis: Diagnosis | None = Field(default=None, description="None while it runs.")
    verdict: Verdict | None = Field(default=None, description="None while it runs.")
    text_preview: str | None = Field(
        default=None, description="The message's beginning; None for private runs."
    )


class RunPage(BaseModel):
    """A page of runs; `next` is the `before` of the following page (None: the last)."""

    runs: list[RunSummary]
    next: str | None = None


def _summary(item: dict[str, Any]) -> RunSummary:
    return RunSummary.model_validate(
        {**item, "status": CLIENT_STATUS.get(str(item.get("status")), "running")}
    )


@router.get("")
async def list_runs(
    request: Request,
    caller: Caller,
    *,
    user: str | None = None,
    conversation: str | None = None,
    run_status: Annotated[ClientStatus | None, Query(alias="status")] = None,
    verdict: Annotated[
        Literal["completed", "partial", "failed", "unverifiable", "needs_human"] | None, Query()
    ] = None,
    since: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    before: str | None = None,
) -> RunPage:
    """Runs, recent first. `user`: omitted means the caller's own (every user's for an
    admin); a user naming someone else is refused with 403."""
    if not caller.is_admin:
        if user is not None and user != caller.user_id:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "you may list only your own runs")
        user = caller.user_id
    given = {"user": user, "conversation": conversation, "verdict": verdict, "before": before}
    params: dict[str, Any] = {k: v for k, v in given.items() if v is not None} | {"limit": limit}
    if since is not None:
        params["since"] = since.isoformat()
    if run_status is not None:
        params["status"] = _STATES[run_status]
    page = await request.app.state.runs.request("GET", "/runs", params=params)
    return RunPage(runs=[_summary(item) for item in page["runs"]], next=page.get("next"))
