"""The service credential: who may call a service's internal HTTP API.

Every service of one deployment shares one secret, `WEIR_SERVICE_TOKEN` (the launcher makes
a random one per stack; compose and Kubernetes take it from a secret). The internal routes of
harness, memory, rag and tools require `Authorization: Bearer <token>`; a service with no
token configured answers 503 on them, so nothing is open by mistake. `/health` and `/ready`
stay open. Callers add `service_headers(token)` to their internal requests.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request, params, status
from pydantic import SecretStr

TOKEN_ENV = "WEIR_SERVICE_TOKEN"  # noqa: S105 - the variable's name, not a secret
DISABLED = f"internal API disabled: {TOKEN_ENV} is not set"
MISSING = "service credential missing"
WRONG = "service credential wrong"

Token = SecretStr | str | None


def _plain(token: Token) -> str:
    if isinstance(token, SecretStr):
        return token.get_secret_value()
    return token or ""


def service_headers(token: Token) -> dict[str, str]:
    """The header an internal call carries (none when no token is configured)."""
    plain = _plain(token)
    return {"Authorization": f"Bearer {plain}"} if plain else {}


def _bearer(request: Request) -> str | None:
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        return None
    return credential.strip()


def token_checker(token: Token) -> Callable[[Request], Awaitable[None]]:
    """The check itself: 503 with no token configured, 401 for a missing or wrong one."""
    expected = _plain(token).encode()

    async def check_service_token(request: Request) -> None:
        if not expected:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, DISABLED)
        given = _bearer(request)
        if given is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, MISSING, headers={"WWW-Authenticate": "Bearer"}
            )
        if not hmac.compare_digest(given.encode(), expected):
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, WRONG, headers={"WWW-Authenticate": "Bearer"}
            )

    return check_service_token


def require_service_token(token: Token) -> params.Depends:
    """A route or router dependency: `APIRouter(dependencies=[require_service_token(t)])`."""
    return params.Depends(dependency=token_checker(token))
