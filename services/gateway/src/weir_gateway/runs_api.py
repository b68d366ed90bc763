"""Answers by run id (issue 10): a client whose socket, or whose gateway, went away asks for
its run here (`GET /api/runs/{run_id}`) or sends a `resume` frame on a new socket. The
harness owns the run records; the gateway decides only who may see which: the owner, or an
admin. Anyone else gets the same 404 as for a run that does not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Request, status
from pydantic import BaseModel, Field

from weir_gateway.auth import Principal, http_principal
from weir_gateway.errors import public_reason
from weir_gateway.internal import InternalClient
from weir_gateway.service import Frame, ReplyHub, RunStream
from weir_gateway.tail import ReplySource

router = APIRouter(prefix="/api/runs", tags=["runs"])
Caller = Annotated[Principal, Depends(http_principal)]

# the harness's run states, as a client sees them: an answered run is complete for it
_STATUS: dict[str, Literal["running", "completed", "failed"]] = {
    "queued": "running",
    "running": "running",
    "finishing": "completed",
    "completed": "completed",
    "failed": "failed",
}


class RunError(BaseModel):
    """Why a run failed."""

    code: str
    message: str


class RunAnswer(BaseModel):
    """A run's outcome as its owner sees it."""

    run_id: str
    status: Literal["running", "completed", "failed"]
    text: str | None = Field(default=None, description="The whole answer, once completed.")
    route: str | None = None
    intent: str | None = None
    offline: bool = False
    error: RunError | None = None
    client_message_id: str | None = Field(default=None, description="The `id` of the chat frame.")

    def final_frame(self, ids: Frame) -> Frame | None:
        """The `done` or `error` frame of a finished run (None while it runs)."""
        if self.status == "completed":
            return {"type": "done", "run_id": self.run_id, "text": self.text or "",
                    "intent": self.intent, "route": self.route, "offline": self.offline,
                    **ids}  # fmt: skip
        if self.status == "failed" and self.error is not None:
            return {"type": "error", "run_id": self.run_id, "code": self.error.code,
                    "message": self.error.message, **ids}  # fmt: skip
        return None


def answer_of(run: dict[str, Any]) -> RunAnswer:
    """What a client may read of a run record."""
    state, request = run.get("state") or {}, run.get("request") or {}
    found = _STATUS.get(str(run.get("status")), "running")
    error = RunError(code="step_failed", message=public_reason("step_failed", run.get("error")))
    return RunAnswer(
        run_id=str(run["run_id"]),
        status=found,
        text=state.get("answer") if found == "completed" else None,
        route=state.get("route"),
        intent=state.get("intent"),
        offline=bool(state.get("offline")),
        error=error if found == "failed" else None,
        client_message_id=request.get("client_message_id"),
    )


async def _record(runs: InternalClient, run_id: str) -> dict[str, Any] | None:
    try:
        record: dict[str, Any] = await runs.request("GET", f"/runs/{quote(run_id, safe='')}")
    except HTTPException as exc:
        if exc.status_code == status.HTTP_404_NOT_FOUND:
            return None
        raise
    run: dict[str, Any] = record["run"]
    return run


async def find_record(
    runs: InternalClient, run_id: str, caller: Principal, *, grace_s: float = 0.0
) -> dict[str, Any] | None:
    """The harness's record of the caller's run `run_id` (None when unknown or someone
    else's). A run not yet recorded is looked for again for `grace_s`: the harness records
    a run when it reads the request, which may lag behind the gateway's `accepted`."""
    run = await _record(runs, run_id)
    waited_until = time.monotonic() + grace_s
    while run is None and time.monotonic() < waited_until:
        await asyncio.sleep(0.25)
        run = await _record(runs, run_id)
    if run is None or (run.get("user_id") != caller.user_id and not caller.is_admin):
        return None
    return run


async def find_run(runs: InternalClient, run_id: str, caller: Principal) -> RunAnswer | None:
    """The caller's run `run_id` (None when unknown or someone else's)."""
    run = await find_record(runs, run_id, caller)
    return answer_of(run) if run is not None else None


def reply_source(run: dict[str, Any]) -> ReplySource | None:
    """Where the run's replies went (None for a record without its request)."""
    request = run.get("request") or {}
    topic, requested = request.get("reply_to"), request.get("occurred_at")
    if not topic or not requested:
        return None
    return ReplySource(str(topic), datetime.fromisoformat(str(requested)))


async def look_up(runs: InternalClient, hub: ReplyHub, stream: RunStream) -> bool:
    """End a followed run from its record when it has finished; True if it had."""
    with contextlib.suppress(HTTPException):
        run = await _record(runs, stream.run_id)
        final = answer_of(run).final_frame(stream.ids()) if run is not None else None
        if final is not None:
            hub.finish(stream.run_id, final)
            return True
    return False


@router.get("/{run_id}")
async def get_run(run_id: str, request: Request, caller: Caller) -> RunAnswer:
    """The run's status and, once finished, its whole answer or its error."""
    found = await find_run(request.app.state.runs, run_id, caller)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id}")
    return found
