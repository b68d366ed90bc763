"""The caller at the edge: a Principal (user and role), and the FastAPI dependencies that
find it with the configured `Authenticator` (see `identity`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fastapi import HTTPException, Request, WebSocket, status

if TYPE_CHECKING:
    from weir_gateway.identity import Authenticator

Role = Literal["user", "admin"]


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: a user id and a role."""

    user_id: str
    role: Role = "user"

    @property
    def is_admin(self) -> bool:
        """Admins manage the shared knowledge base and may read any user's memories."""
        return self.role == "admin"

    def require_admin(self) -> None:
        """Raise 403 unless the caller is an admin."""
        if not self.is_admin:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "admin role required")

    def require_self_or_admin(self, user_id: str) -> None:
        """Raise 403 when a user reaches for another user's data."""
        if user_id != self.user_id and not self.is_admin:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "not your data")


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request offers: its headers (lower-case names), peer address, WebSocket ticket."""

    headers: Mapping[str, str]
    peer: str | None
    ticket: str | None = None

    def bearer(self) -> str | None:
        """The bearer token of the `Authorization` header, if any."""
        scheme, _, value = self.headers.get("authorization", "").partition(" ")
        return value.strip() or None if scheme.lower() == "bearer" else None


class AuthError(Exception):
    """The caller could not be verified; `reason` is safe to show them."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


URL_IDENTITY = ("token", "user")
"""Query parameters that would carry an identity in a URL (which ends up in proxy logs)."""


async def http_principal(request: Request) -> Principal:
    """FastAPI dependency for HTTP routes: the caller, or 401 with the reason (also when the
    URL tries to name one: `?token=` / `?user=` are refused, whatever the headers say)."""
    return await _identify(request, URL_IDENTITY)


async def http_principal_with_user_filter(request: Request) -> Principal:
    """As `http_principal`, for a route whose `?user=` is a filter, never an identity (the
    run list: the route itself refuses a user naming someone else); `?token=` is refused."""
    return await _identify(request, ("token",))


async def _identify(request: Request, refused: tuple[str, ...]) -> Principal:
    auth: Authenticator = request.app.state.auth
    peer = request.client.host if request.client else None
    if any(name in request.query_params for name in refused):
        raise _unauthorized("no identity in the URL: send an Authorization header")
    try:
        return await auth.identify(Credentials(request.headers, peer))
    except AuthError as exc:
        raise _unauthorized(exc.reason) from None


def _unauthorized(reason: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, reason, headers={"WWW-Authenticate": "Bearer"}
    )


async def ws_principal(ws: WebSocket, auth: Authenticator) -> Principal:
    """The caller of a WebSocket (a ticket in the URL, or the HTTP credentials); AuthError
    when unverified (the socket is then closed with 1008 and the reason)."""
    if any(name in ws.query_params for name in URL_IDENTITY):
        raise AuthError("no identity in the URL: get a ticket from POST /api/ws-ticket")
    peer = ws.client.host if ws.client else None
    return await auth.identify(Credentials(ws.headers, peer, ws.query_params.get("ticket")))
