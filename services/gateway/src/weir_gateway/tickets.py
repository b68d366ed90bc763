"""One-use WebSocket tickets: a browser cannot set headers on a WebSocket, and a token must
never travel in a URL, so it trades its token for a short-lived ticket first. Kept in Redis
when the gateway has one (any replica can redeem it), else in this process."""

from __future__ import annotations

import json
import secrets
import time
from typing import Protocol

from redis.asyncio import Redis

from weir_gateway.auth import Principal


class TicketStore(Protocol):
    """Issues tickets and redeems each at most once, before it expires."""

    async def issue(self, principal: Principal, ttl_s: float) -> str:
        """A new ticket for `principal`, valid for `ttl_s` seconds."""
        ...

    async def redeem(self, ticket: str) -> Principal | None:
        """The ticket's principal, once; None when unknown, used or expired."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def _new_ticket() -> str:
    return secrets.token_urlsafe(24)


class MemoryTickets:
    """Tickets in this process (one gateway replica)."""

    def __init__(self) -> None:
        self._tickets: dict[str, tuple[Principal, float]] = {}

    async def issue(self, principal: Principal, ttl_s: float) -> str:
        now = time.monotonic()
        self._tickets = {t: v for t, v in self._tickets.items() if v[1] > now}
        ticket = _new_ticket()
        self._tickets[ticket] = (principal, now + ttl_s)
        return ticket

    async def redeem(self, ticket: str) -> Principal | None:
        found = self._tickets.pop(ticket, None)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    async def close(self) -> None:
        self._tickets.clear()


class RedisTickets:
    """Tickets in Redis: `SET … EX` to issue, `GETDEL` to redeem exactly once."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = f"{prefix}ws-ticket:"

    @classmethod
    def from_url(cls, url: str, prefix: str) -> RedisTickets:
        """A store on the Redis at `url`, keys under `prefix`."""
        return cls(Redis.from_url(url), prefix)

    async def issue(self, principal: Principal, ttl_s: float) -> str:
        ticket = _new_ticket()
        value = json.dumps({"user_id": principal.user_id, "role": principal.role})
        await self._redis.set(self._prefix + ticket, value, px=max(1, int(ttl_s * 1000)))
        return ticket

    async def redeem(self, ticket: str) -> Principal | None:
        raw = await self._redis.getdel(self._prefix + ticket)
        if raw is None:
            return None
        data = json.loads(raw)
        return Principal(data["user_id"], "admin" if data["role"] == "admin" else "user")

    async def close(self) -> None:
        await self._redis.aclose()
