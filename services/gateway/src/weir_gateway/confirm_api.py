"""Confirmation before side effects, at the edge (issue 13).

A run whose planned tool call needs the user's approval sends a `confirm` frame (WebSocket)
or an `event: confirm` (SSE): `{"type": "confirm", "run_id", "call_id", "tool", "arguments",
"server", "expires_at", "reason"}`. The answer comes as a client frame `{"type": "confirm",
"run_id", "call_id", "approve": true|false, "remember": "once"|"conversation"|"always"}`
or as `POST /api/runs/{run_id}/confirm {"call_id", "approve", "remember"}`; either is
published as `tool.confirmation.given` with the verified user's id, after the harness's
record shows the run is the caller's and waits for that call. The harness checks both again
and ignores anything else (a duplicate approval runs nothing twice).

Standing answers are the user's tool policies: `GET /api/tools/policies`,
`PUT /api/tools/policies {"tool", "decision": "allow"|"deny"|"ask", "conversation_id"?}`,
`DELETE /api/tools/policies?tool=&conversation_id=`; always the verified user's own.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Request, status
from faststream.kafka import KafkaBroker
from pydantic import BaseModel, Field

from weir_common.bus import publish
from weir_common.events import Remember, ToolConfirmationGiven
from weir_gateway.auth import Principal, http_principal
from weir_gateway.frames import CONVERSATION_ID
from weir_gateway.internal import InternalClient
from weir_gateway.runs_api import find_record
from weir_gateway.service import internal_conversation_id
from weir_gateway.settings import GatewaySettings

router = APIRouter(tags=["confirmation"])
Caller = Annotated[Principal, Depends(http_principal)]
PolicyDecision = Literal["allow", "deny", "ask"]


class ConfirmBody(BaseModel):
    """The user's answer for a tool call waiting for approval."""

    call_id: str = Field(min_length=1, max_length=128)
    approve: bool
    remember: Remember = "once"


class ConfirmError(Exception):
    """Why an answer was not passed on: a code for frames, a status for HTTP."""

    def __init__(self, code: str, message: str, http_status: int) -> None:
        super().__init__(message)
        self.code, self.message, self.http_status = code, message, http_status


async def give_confirmation(
    runs: InternalClient,
    broker: KafkaBroker,
    settings: GatewaySettings,
    *,
    user_id: str,
    run_id: str,
    answer: ConfirmBody,
) -> dict[str, Any]:
    """Publish the user's answer for the call `answer.call_id` of their run `run_id`."""
    try:
        run = await find_record(runs, run_id, Principal(user_id))
    except HTTPException as exc:
        raise ConfirmError("unavailable", f"cannot look the run up now: {exc.detail}",
                           status.HTTP_503_SERVICE_UNAVAILABLE) from exc  # fmt: skip
    if run is None or run.get("user_id") != user_id:  # an admin answers for no one else
        raise ConfirmError("unknown_run", f"no run {run_id} of yours", status.HTTP_404_NOT_FOUND)
    waiting = (run.get("state") or {}).get("awaiting") or {}
    if run.get("status") != "awaiting_confirmation" or waiting.get("call_id") != answer.call_id:
        raise ConfirmError(
            "not_awaiting",
            f"run {run_id} is not waiting for a confirmation of call {answer.call_id}",
            status.HTTP_409_CONFLICT,
        )
    given = ToolConfirmationGiven(
        call_id=answer.call_id,
        approve=answer.approve,
        remember=answer.remember,
        run_id=run_id,
        conversation_id=run.get("conversation_id"),
        user_id=user_id,
    )
    await publish(broker, settings.topics, given)
    return {"run_id": run_id, "call_id": answer.call_id, "approve": answer.approve,
            "remember": answer.remember}  # fmt: skip


def confirm_frame(run: dict[str, Any]) -> dict[str, Any] | None:
    """The `confirm` frame of a run record that waits for a confirmation (None otherwise)."""
    waiting = (run.get("state") or {}).get("awaiting")
    if run.get("status") != "awaiting_confirmation" or not waiting:
        return None
    call = waiting.get("call") or {}
    return {"type": "confirm", "run_id": run.get("run_id"), "call_id": waiting.get("call_id"),
            "tool": call.get("tool"), "arguments": call.get("arguments") or {},
            "server": waiting.get("server") or "", "expires_at": waiting.get("expires_at"),
            "reason": waiting.get("reason")}  # fmt: skip


@router.post("/api/runs/{run_id}/confirm", status_code=status.HTTP_202_ACCEPTED)
async def confirm(run_id: str, body: ConfirmBody, request: Request, caller: Caller) -> Any:
    """Approve or deny the tool call the run waits for (the run's own user only): 202 once
    the answer is passed on; the run's stream goes on (or a `GET /api/runs/{id}` shows it)."""
    state = request.app.state
    try:
        sent = await give_confirmation(
            state.runs, state.broker, state.settings,
            user_id=caller.user_id, run_id=run_id, answer=body,
        )  # fmt: skip
    except ConfirmError as exc:
        raise HTTPException(exc.http_status, exc.message) from None
    return {**sent, "status": "accepted"}


class PolicyBody(BaseModel):
    """A standing answer for a tool: in one conversation of the user, or in all of them."""

    tool: str = Field(min_length=1, max_length=200, description="A tool name, or * for all.")
    decision: PolicyDecision
    conversation_id: str | None = Field(
        default=None, pattern=CONVERSATION_ID, description="Your conversation id; none: all."
    )


def _policies_path(user_id: str) -> str:
    return f"/users/{quote(user_id, safe='')}/tool-policies"


def _public(policy: dict[str, Any]) -> dict[str, Any]:
    scoped = policy.get("conversation_id") is not None
    return {"tool": policy["tool"], "decision": policy["decision"],
            "conversation_id": policy.get("client_conversation_id") if scoped else None,
            "scope": "conversation" if scoped else "always",
            "updated_at": policy.get("updated_at")}  # fmt: skip


@router.get("/api/tools/policies")
async def list_policies(request: Request, caller: Caller) -> dict[str, Any]:
    """Your tool policies: which tools are always allowed, denied or asked for."""
    found = await request.app.state.runs.request("GET", _policies_path(caller.user_id))
    return {"policies": [_public(p) for p in found.get("policies", [])]}


@router.put("/api/tools/policies")
async def put_policy(body: PolicyBody, request: Request, caller: Caller) -> dict[str, Any]:
    """Set one of your tool policies (replacing the one for that tool and scope)."""
    internal = (
        internal_conversation_id(caller.user_id, body.conversation_id)
        if body.conversation_id
        else None
    )
    payload = {"tool": body.tool, "decision": body.decision, "conversation_id": internal,
               "client_conversation_id": body.conversation_id}  # fmt: skip
    await request.app.state.runs.request("PUT", _policies_path(caller.user_id), json=payload)
    return body.model_dump()


@router.delete("/api/tools/policies")
async def delete_policy(
    request: Request, caller: Caller, tool: str, conversation_id: str | None = None
) -> dict[str, Any]:
    """Remove one of your tool policies (404 when there was none)."""
    params = {"tool": tool}
    if conversation_id:
        params["conversation_id"] = internal_conversation_id(caller.user_id, conversation_id)
    found = await request.app.state.runs.request(
        "DELETE", _policies_path(caller.user_id), params=params
    )
    if not found.get("deleted"):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no policy for {tool}")
    return {"tool": tool, "conversation_id": conversation_id, "deleted": True}
