"""Per-user quotas at the edge (issue 11): chat turns and uploads per time window, counted in
Redis (a moving window shared by every gateway replica, through the `limits` library) or in
this process without Redis; and runs in flight per user on this gateway."""

from __future__ import annotations

import time
from typing import Literal

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from redis.asyncio import BlockingConnectionPool
from redis.exceptions import RedisError

from weir_gateway.settings import GatewaySettings

Kind = Literal["chat", "upload"]


class QuotaExceededError(Exception):
    """A user asked for more than their quota (or the quotas cannot be checked now: code
    `unavailable`, HTTP 503); `retry_after_s` says when to try again."""

    def __init__(self, code: str, reason: str, retry_after_s: float, status: int = 429) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.status = status


def _storage(settings: GatewaySettings) -> Storage:
    if settings.redis_url:
        # a bounded pool that waits for a free connection: a burst of users (hundreds of
        # sockets sending at once) queues for a moment instead of failing
        pool = BlockingConnectionPool.from_url(
            settings.redis_url, max_connections=settings.quota_redis_connections, timeout=10
        )
        return RedisStorage(
            f"async+{settings.redis_url}",
            implementation="redispy",
            key_prefix=f"{settings.topic_prefix}quota",
            connection_pool=pool,  # type: ignore[arg-type]  # passed on to redis-py
        )
    return MemoryStorage()


class Quotas:
    """Checks and spends a user's quotas."""

    def __init__(self, settings: GatewaySettings) -> None:
        self._storage = _storage(settings)
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._items: dict[Kind, RateLimitItem] = {
            "chat": parse(settings.rate_limit_chat),
            "upload": parse(settings.rate_limit_upload),
        }
        self._max_inflight = settings.max_inflight_runs

    async def spend(self, kind: Kind, user_id: str, cost: int = 1) -> None:
        """Take `cost` from the user's `kind` quota, or raise QuotaExceededError (429)."""
        item = self._items[kind]
        try:
            if await self._limiter.hit(item, kind, user_id, cost=cost):
                return
            stats = await self._limiter.get_window_stats(item, kind, user_id)
        except RedisError as exc:  # fail closed, with a clear answer: nothing is published
            reason = f"quotas cannot be checked now ({type(exc).__name__}); try again"
            raise QuotaExceededError("unavailable", reason, 2.0, status=503) from exc
        wait = max(1.0, round(stats.reset_time - time.time(), 1))
        raise QuotaExceededError("rate_limited", f"{kind} quota of {item} used up", wait)

    def admit_run(self, user_id: str, inflight: int) -> None:
        """Raise QuotaExceededError when the user already has `max_inflight_runs` runs open."""
        if inflight >= self._max_inflight:
            raise QuotaExceededError(
                "too_many_runs",
                f"{inflight} runs still open (at most {self._max_inflight}); wait for one",
                1.0,
            )
