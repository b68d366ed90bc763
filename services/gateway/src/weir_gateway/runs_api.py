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
from weir_gateway.service import ReplyHub
from weir_gateway.stream import Frame, RunStream
from weir_gateway.tail import ReplySource

router = APIRouter(prefix="/api/runs", tags=["runs"])
Caller = Annotated[Principal, Depends(http_principal)]

ClientStatus = Literal["running", "awaiting_confirmation", "completed", "failed"]
# the harness's run states, as a client sees them: an answered run is complete for it
CLIENT_STATUS: dict[str, ClientStatus] = {
    "queued": "running",
    "running": "running",
    "awaiting_confirmation": "awaiting_confirmation",  # a tool call waits for the user's OK
    "finishing": "completed",
    "completed": "completed",
    "failed": "failed",
}


class RunError(BaseModel):
    """Why a run failed."""

    code: str
    message: str


class Diagnosis(BaseModel):
    """How a run went, by rule (harness `weir_harness.diagnosis`)."""

    level: Literal["normal", "warning", "error", "blocked", "budget_exhausted"]
    hints: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    """Whether a run did what was asked, by rule, with the evidence for it."""

    verdict: Literal["completed", "partial", "failed", "unverifiable", "needs_human"]
    evidence: list[str] = Field(default_factory=list)


class TimelineEvent(BaseModel):
    """One entry of a run's step log: what it was and a few structured facts of it."""

    seq: int
    at: datetime
    step: str
    kind: str = Field(description="request | command | result | timeout | resend | budget")
    attempt: int
    event: str = Field(description="The event type, e.g. route.decided, or the kind.")
    detail: dict[str, Any] = Field(default_factory=dict)
    duration_ms: float | None = Field(default=None, description="A result after its command.")


class RunAnswer(BaseModel):
    """A run's outcome as its owner sees it (the record fields are None for a resume)."""

    run_id: str
    status: ClientStatus
    text: str | None = Field(default=None, description="The whole answer, once completed.")
    route: str | None = None
    intent: str | None = None
    offline: bool = False
    error: RunError | None = None
    client_message_id: str | None = Field(default=None, description="The `id` of the chat frame.")
    user_id: str | None = None
    conversation_id: str | None = None
    created_at: datetime | None = None
    ended_at: datetime | None = None
    diagnosis: Diagnosis | None = Field(default=None, description="Once the run ended.")
    verdict: Verdict | None = Field(default=None, description="Once the run ended.")
    timeline: list[TimelineEvent] | None = None

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
    found = CLIENT_STATUS.get(str(run.get("status")), "running")
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


def record_answer(record: dict[str, Any]) -> RunAnswer:
    """A whole run record (`GET /runs/{id}` of the harness) as the owner or an admin reads
    it: the answer plus ids, times, diagnosis, verdict and timeline."""
    run = record["run"]
    return answer_of(run).model_copy(
        update={
            "user_id": run.get("user_id"),
            "conversation_id": run.get("conversation_id"),
            "created_at": record.get("created_at"),
            "ended_at": record.get("ended_at"),
            "diagnosis": Diagnosis.model_validate(record["diagnosis"])
            if record.get("diagnosis")
            else None,
            "verdict": Verdict.model_validate(record["verdict"]) if record.get("verdict") else None,
            "timeline": [TimelineEvent.model_validate(e) for e in record.get("timeline") or []],
        }
    )


async def _whole(runs: InternalClient, run_id: str) -> dict[str, Any] | None:
    try:
        record: dict[str, Any] = await runs.request("GET", f"/runs/{quote(run_id, safe='')}")
    except HTTPException as exc:
        if exc.status_code == status.HTTP_404_NOT_FOUND:
            return None
        raise
    return record


async def _record(runs: InternalClient, run_id: str) -> dict[str, Any] | None:
    record = await _whole(runs, run_id)
    if record is None:
        return None
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
    """The run's status and, once finished, its whole answer or its error; its ids, times,
    diagnosis, verdict and timeline (F41). Owner or admin; anyone else gets 404."""
    record = await _whole(request.app.state.runs, run_id)
    owner = record["run"].get("user_id") if record is not None else None
    if record is None or (owner != caller.user_id and not caller.is_admin):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id}")
    return record_answer(record)
