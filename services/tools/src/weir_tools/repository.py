"""Stored call results by idempotency key, so a repeated call returns them without calling.

Before a call, its key is claimed (an in-progress marker): a key claimed but without a
result means an earlier call started and its outcome is unknown (a crash mid-call).

A call made for a user is indexed under that user (a set of their keys), so "forget me" can
delete their results and markers (`forget_user`).

Redis when `REDIS_URL` is set (shared by every instance, kept `ttl_s`), otherwise a bounded
in-process LRU with the same expiry.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .models import ToolOutcome


class StoreError(RuntimeError):
    """The result store could not be reached; retrying may succeed."""


class ResultStore(Protocol):
    """Tool results by idempotency key."""

    async def get(self, key: str) -> ToolOutcome | None:
        """The result stored for `key`, if any and not expired."""
        ...

    async def put(self, key: str, outcome: ToolOutcome, user_id: str | None = None) -> None:
        """Store `outcome` under `key` unless a result is already there (the first one wins);
        the key is indexed under `user_id`, if given."""
        ...

    async def claim(self, key: str, user_id: str | None = None) -> bool:
        """Mark a call with `key` as started; False when it was already marked. The key is
        indexed under `user_id`, if given."""
        ...

    async def forget_user(self, user_id: str) -> int:
        """Delete every result and marker of the user's calls; how many keys they had."""
        ...

    async def release(self, key: str) -> None:
        """Drop the marker of a call that did not run the tool (so a retry may call)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class RedisResultStore:
    """Results as JSON strings under `<prefix><key>`, expiring after `ttl_s`."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        ttl_s: int,
        prefix: str = "weir:tools:result:",
        marker_prefix: str = "weir:tools:started:",
        user_prefix: str = "weir:tools:user:",
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._prefix = prefix
        self._marker_prefix = marker_prefix
        self._user_prefix = user_prefix

    async def _index(self, key: str, user_id: str | None) -> None:
        """Add `key` to the user's set, which lives as long as their newest key."""
        if user_id is not None:
            await self._client.sadd(self._user_prefix + user_id, key)
            await self._client.expire(self._user_prefix + user_id, self._ttl_s)

    async def get(self, key: str) -> ToolOutcome | None:
        """The stored result, or None."""
        try:
            raw = await self._client.get(self._prefix + key)
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc
        return ToolOutcome.model_validate_json(raw) if raw is not None else None

    async def put(self, key: str, outcome: ToolOutcome, user_id: str | None = None) -> None:
        """SET NX with the TTL: a concurrent duplicate cannot overwrite the first result."""
        try:
            await self._index(key, user_id)
            await self._client.set(
                self._prefix + key, outcome.model_dump_json(), ex=self._ttl_s, nx=True
            )
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc

    async def claim(self, key: str, user_id: str | None = None) -> bool:
        """SET NX of the marker, kept as long as a result would be."""
        try:
            await self._index(key, user_id)
            made = await self._client.set(self._marker_prefix + key, b"1", ex=self._ttl_s, nx=True)
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc
        return bool(made)

    async def forget_user(self, user_id: str) -> int:
        """Delete the user's results, markers and set of keys."""
        index = self._user_prefix + user_id
        try:
            keys = [k.decode() if isinstance(k, bytes) else str(k)
                    for k in await self._client.smembers(index)]  # fmt: skip
            stored = [p + k for k in keys for p in (self._prefix, self._marker_prefix)]
            await self._client.delete(index, *stored)
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc
        return len(keys)

    async def release(self, key: str) -> None:
        """Delete the marker."""
        try:
            await self._client.delete(self._marker_prefix + key)
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc

    async def ping(self) -> None:
        """Raise `StoreError` unless Redis answers."""
        try:
            await self._client.ping()
        except RedisError as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


class MemoryResultStore:
    """The zero-setup fallback: at most `max_keys` results in this process, lost on restart."""

    def __init__(
        self,
        *,
        ttl_s: int,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = ttl_s
        self._max_keys = max_keys
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, ToolOutcome]] = OrderedDict()
        self._claims: OrderedDict[str, float] = OrderedDict()
        self._users: dict[str, set[str]] = {}

    async def get(self, key: str) -> ToolOutcome | None:
        """The stored result, or None when absent or expired."""
        item = self._items.get(key)
        if item is None:
            return None
        expires_at, outcome = item
        if expires_at <= self._clock():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return outcome

    async def put(self, key: str, outcome: ToolOutcome, user_id: str | None = None) -> None:
        """Store unless present; evict the least recently used past the bound."""
        if user_id is not None:
            self._users.setdefault(user_id, set()).add(key)
        if await self.get(key) is not None:
            return
        self._items[key] = (self._clock() + self._ttl_s, outcome)
        while len(self._items) > self._max_keys:
            self._items.popitem(last=False)

    async def claim(self, key: str, user_id: str | None = None) -> bool:
        """Mark `key` in this process (lost on restart, like the results)."""
        if user_id is not None:
            self._users.setdefault(user_id, set()).add(key)
        now = self._clock()
        if self._claims.get(key, now) > now:
            return False
        self._claims[key] = now + self._ttl_s
        self._claims.move_to_end(key)
        while len(self._claims) > self._max_keys:
            self._claims.popitem(last=False)
        return True

    async def release(self, key: str) -> None:
        """Forget the mark."""
        self._claims.pop(key, None)

    async def forget_user(self, user_id: str) -> int:
        """Drop the user's results and marks."""
        keys = self._users.pop(user_id, set())
        for key in keys:
            self._items.pop(key, None)
            self._claims.pop(key, None)
        return len(keys)

    async def close(self) -> None:
        """Nothing to release."""
