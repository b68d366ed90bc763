"""Who is calling (F43), in one of three modes chosen by `AUTH_MODE`; the default refuses
what it cannot verify.

- `local` (the `make run` default, allowed only on a loopback address): one local user, who
  owns the install and administers it.
- `token`: `Authorization: Bearer …`, either a static token (`AUTH_TOKENS`) or a JWT checked
  with `AUTH_JWT_SECRET` (HS256) or the keys at `AUTH_JWKS_URL`; `sub` is the user and the
  `AUTH_ROLE_CLAIM` claim the role. Nothing a client sets in a header names its role.
- `proxy`: `X-User-Id` / `X-User-Role`, believed only from the `AUTH_PROXY_TRUSTED` networks.

A WebSocket may instead carry `?ticket=`, a one-use ticket from `POST /api/ws-ticket`: the
only identity ever read from a URL.
"""

from __future__ import annotations

import ipaddress
import re

from weir_common.events.base import USER_ID_PATTERN
from weir_gateway.auth import AuthError, Credentials, Principal, Role
from weir_gateway.jwt_verify import JwtVerifier
from weir_gateway.settings import GatewaySettings
from weir_gateway.tickets import TicketStore

USER_ID = re.compile(USER_ID_PATTERN)


class AuthConfigError(ValueError):
    """The identity settings cannot work (refused at start, never at the first request)."""


def parse_tokens(spec: str) -> dict[str, Principal]:
    """`"tok=alice:admin,tok2=bob"` → {token: Principal}."""
    principals: dict[str, Principal] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        token, _, who = item.partition("=")
        user, _, role = who.partition(":")
        if token and user:
            principals[token] = Principal(user, "admin" if role == "admin" else "user")
    return principals


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or `localhost`)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def trusted_networks(spec: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """`"10.0.0.0/8, 127.0.0.1"` → networks; AuthConfigError on a malformed entry."""
    networks = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise AuthConfigError(f"AUTH_PROXY_TRUSTED: {exc}") from None
    return networks


def checked_user(user: str) -> str:
    """`user` if it is a well-formed user id, else AuthError."""
    if not USER_ID.match(user):
        raise AuthError("malformed user id")
    return user


class Authenticator:
    """Turns credentials into a Principal, in the configured mode."""

    def __init__(self, settings: GatewaySettings, tickets: TicketStore) -> None:
        self._settings = settings
        self._tickets = tickets
        self._tokens = parse_tokens(settings.auth_tokens.get_secret_value())
        self._jwt = JwtVerifier.from_settings(settings)
        self._trusted = trusted_networks(settings.auth_proxy_trusted)
        self._check()

    @property
    def mode(self) -> str:
        """`local`, `token` or `proxy`."""
        return self._settings.auth_mode

    def _check(self) -> None:
        settings = self._settings
        if self.mode == "local" and not is_loopback(settings.service_host):
            raise AuthConfigError(
                f"AUTH_MODE=local serves one unauthenticated user and is allowed only on a "
                f"loopback address, not {settings.service_host}; set AUTH_MODE=token or proxy"
            )
        if self.mode == "token" and not self._tokens and self._jwt is None:
            raise AuthConfigError(
                "AUTH_MODE=token needs AUTH_TOKENS, AUTH_JWT_SECRET or AUTH_JWKS_URL"
            )
        if self.mode == "proxy" and not self._trusted:
            raise AuthConfigError("AUTH_MODE=proxy needs AUTH_PROXY_TRUSTED (addresses/CIDRs)")

    async def identify(self, creds: Credentials) -> Principal:
        """The caller, or AuthError with a reason."""
        if creds.ticket is not None:
            found = await self._tickets.redeem(creds.ticket)
            if found is None:
                raise AuthError("unknown, used or expired ticket")
            return found
        if self.mode == "local":
            return Principal(self._settings.local_user, "admin")
        if self.mode == "proxy":
            return self._from_proxy(creds)
        return await self._from_token(creds)

    def _from_proxy(self, creds: Credentials) -> Principal:
        if not self._trusts(creds.peer):
            raise AuthError("identity headers are accepted only from a trusted proxy")
        settings = self._settings
        user = creds.headers.get(settings.auth_proxy_user_header.lower())
        if not user:
            raise AuthError(f"the proxy sent no {settings.auth_proxy_user_header}")
        role: Role = (
            "admin" if creds.headers.get(settings.auth_proxy_role_header.lower()) == "admin"
            else "user"
        )  # fmt: skip
        return Principal(checked_user(user), role)

    def _trusts(self, peer: str | None) -> bool:
        if peer is None:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in net for net in self._trusted)

    async def _from_token(self, creds: Credentials) -> Principal:
        token = creds.bearer()
        if token is None:
            raise AuthError("a bearer token is required")
        found = self._tokens.get(token)
        if found is not None:
            return found
        if self._jwt is not None and token.count(".") == 2:
            principal = await self._jwt.verify(token)
            checked_user(principal.user_id)
            return principal
        raise AuthError("invalid token")

    async def issue_ticket(self, principal: Principal) -> str:
        """A one-use WebSocket ticket for `principal`."""
        return await self._tickets.issue(principal, self._settings.ws_ticket_ttl_s)
