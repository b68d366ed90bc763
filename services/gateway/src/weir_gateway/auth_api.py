"""Identity routes: who am I, and a one-use WebSocket ticket (browsers cannot set headers on
a WebSocket, and a token must not travel in a URL)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from weir_gateway.auth import Principal, http_principal
from weir_gateway.identity import Authenticator

router = APIRouter(prefix="/api", tags=["identity"])
Caller = Annotated[Principal, Depends(http_principal)]


class Me(BaseModel):
    """The caller as the gateway sees them."""

    user_id: str
    role: str
    auth_mode: str


class Ticket(BaseModel):
    """Open `/ws/chat?ticket=…` with it within `expires_in` seconds; it works once."""

    ticket: str
    expires_in: float


@router.get("/me")
async def me(request: Request, caller: Caller) -> Me:
    """Who the gateway takes the caller to be."""
    auth: Authenticator = request.app.state.auth
    return Me(user_id=caller.user_id, role=caller.role, auth_mode=auth.mode)


@router.post("/ws-ticket")
async def ws_ticket(request: Request, caller: Caller) -> Ticket:
    """A one-use ticket for the caller's next WebSocket."""
    auth: Authenticator = request.app.state.auth
    ticket = await auth.issue_ticket(caller)
    return Ticket(ticket=ticket, expires_in=request.app.state.settings.ws_ticket_ttl_s)
