"""Who is calling (F43): a bearer token, or trusted headers from an upstream proxy.

Tokens come from the environment (`AUTH_TOKENS="token1=alice:admin,token2=bob"`); without a
role a user is `user`. `X-User-Id` / `X-User-Role` are believed only when
`TRUST_USER_HEADERS` is on (the default for local runs, off behind an untrusted edge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastapi import HTTPException, Request, WebSocket, status

from weir_gateway.settings import GatewaySettings

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


def _role(value: str | None) -> Role:
    return "admin" if value == "admin" else "user"


def parse_tokens(spec: str) -> dict[str, Principal]:
    """`"tok=alice:admin,tok2=bob"` → {token: Principal}."""
    principals: dict[str, Principal] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        token, _, who = item.partition("=")
        user, _, role = who.partition(":")
        if token and user:
            principals[token] = Principal(user, _role(role or None))
    return principals


def identify(
    headers: dict[str, str], query: dict[str, str], settings: GatewaySettings
) -> Principal | None:
    """The caller from a bearer token or trusted headers; None when anonymous is refused."""
    tokens = parse_tokens(settings.auth_tokens.get_secret_value())
    bearer = headers.get("authorization", "")
    token = bearer.removeprefix("Bearer ").strip() if bearer.startswith("Bearer ") else ""
    token = token or query.get("token", "")
    if token:
        return tokens.get(token)
    if settings.trust_user_headers:
        user = headers.get("x-user-id") or query.get("user")
        if user:
            return Principal(user, _role(headers.get("x-user-role")))
    if tokens:
        return None
    return Principal(settings.default_user)


def http_principal(request: Request) -> Principal:
    """FastAPI dependency for HTTP routes: the caller, or 401."""
    settings: GatewaySettings = request.app.state.settings
    found = identify(dict(request.headers), dict(request.query_params), settings)
    if found is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "a valid bearer token is required")
    return found


def ws_principal(ws: WebSocket, settings: GatewaySettings) -> Principal | None:
    """The caller of a WebSocket, or None (the socket is then closed with 1008)."""
    return identify(dict(ws.headers), dict(ws.query_params), settings)
