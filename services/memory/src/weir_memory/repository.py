"""Short-term memory storage: the recent turns of each conversation, behind one interface.

Each conversation keeps its last `window` turns, oldest first, plus (seed 002's meta hash) a
turn count, the summary of the turns compressed out of it, the time of its last update, and
the run ids already recorded, so that a redelivered `turn.completed` is stored once. A
conversation expires `ttl_s` seconds after its last write. Each user's conversations are
indexed too, so that "forget me" reaches them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir_common.events import Turn

from .stm_memory import InMemoryShortTermStore

__all__ = [
    "InMemoryShortTermStore",
    "RedisShortTermStore",
    "ShortTermStore",
    "StoreError",
]


class StoreError(RuntimeError):
    """The store could not be reached or refused the operation; retrying may succeed."""


class ShortTermStore(Protocol):
    """The recent turns of each conversation."""

    async def append(self, conversation_id: str, turn: Turn, user_id: str | None = None) -> bool:
        """Store `turn` unless its `run_id` was stored before; True when it was new."""
        ...

    async def recent(self, conversation_id: str) -> list[Turn]:
        """The turns in the window, oldest first (empty for an unknown conversation)."""
        ...

    async def turn_count(self, conversation_id: str) -> int:
        """How many turns were ever stored, including those trimmed from the window."""
        ...

    async def summary(self, conversation_id: str) -> str | None:
        """The summary of the turns compressed out of the window, if any."""
        ...

    async def compress(self, conversation_id: str, drop: int, summary: str) -> None:
        """Remove the `drop` oldest turns and set the summary that replaces them, at once."""
        ...

    async def forget_user(self, user_id: str) -> int:
        """Delete every conversation of this user; returns how many there were."""
        ...

    async def note(self, conversation_id: str, key: str) -> str | None:
        """A small value kept with the conversation (e.g. the session recalled last)."""
        ...

    async def set_note(self, conversation_id: str, key: str, value: str) -> None:
        """Keep a small value with the conversation (it expires with it)."""
        ...


# Check-and-append in one step: two consumers handling the same redelivered turn cannot
# both append it. KEYS: turns list, meta hash. ARGV: run field, turn JSON, window, ttl, now.
_APPEND_SCRIPT = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local n = redis.call('HINCRBY', KEYS[2], 'count', 1)
redis.call('HSET', KEYS[2], ARGV[1], n, 'updated_at', ARGV[5])
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""

# Drop the oldest turns and store their summary in one step.
# KEYS: turns list, meta hash. ARGV: turns to drop, summary, ttl, now.
_COMPRESS_SCRIPT = """
redis.call('LTRIM', KEYS[1], tonumber(ARGV[1]), -1)
redis.call('HSET', KEYS[2], 'summary', ARGV[2], 'updated_at', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""


@contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except RedisError as exc:
        raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc


class RedisShortTermStore:
    """Short-term memory in Redis: a list of JSON turns and a metadata hash per conversation.

    Both keys of a conversation share a hash tag, so they live in one slot of a cluster and
    the append script may touch both. `updated_at` in the hash is Unix time in seconds from
    `clock`.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        window: int,
        ttl_s: int,
        prefix: str = "weir:stm:",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._clock = clock
        self._window = window
        self._ttl_s = ttl_s
        self._prefix = prefix
        self._append = client.register_script(_APPEND_SCRIPT)
        self._compress = client.register_script(_COMPRESS_SCRIPT)

    def keys(self, conversation_id: str) -> tuple[str, str]:
        """The turns list and the metadata hash of one conversation."""
        base = f"{self._prefix}{{{conversation_id}}}"
        return f"{base}:turns", f"{base}:meta"

    def user_key(self, user_id: str) -> str:
        """The set of one user's conversation ids."""
        return f"{self._prefix}user:{user_id}"

    async def append(self, conversation_id: str, turn: Turn, user_id: str | None = None) -> bool:
        """Store `turn` once per run id, trim to the window and refresh the TTL."""
        args: list[str | int] = [
            f"run:{turn.run_id}",
            turn.model_dump_json(),
            self._window,
            self._ttl_s,
            self._now(),
        ]
        with _store_errors():
            added = await self._append(keys=list(self.keys(conversation_id)), args=args)
            if user_id is not None:
                key = self.user_key(user_id)
                await self._client.sadd(key, conversation_id)
                await self._client.expire(key, self._ttl_s)
        return bool(added)

    async def summary(self, conversation_id: str) -> str | None:
        """The summary of the turns compressed out of the window."""
        _, meta_key = self.keys(conversation_id)
        with _store_errors():
            raw = await self._client.hget(meta_key, "summary")
        return raw.decode() if isinstance(raw, bytes) else raw

    async def compress(self, conversation_id: str, drop: int, summary: str) -> None:
        """Drop the oldest `drop` turns and set their summary, atomically."""
        with _store_errors():
            await self._compress(
                keys=list(self.keys(conversation_id)),
                args=[drop, summary, self._ttl_s, self._now()],
            )

    def _now(self) -> str:
        return f"{self._clock():.3f}"

    async def note(self, conversation_id: str, key: str) -> str | None:
        """A value kept in the conversation's metadata hash."""
        _, meta_key = self.keys(conversation_id)
        with _store_errors():
            raw = await self._client.hget(meta_key, f"note:{key}")
        return raw.decode() if isinstance(raw, bytes) else raw

    async def set_note(self, conversation_id: str, key: str, value: str) -> None:
        """Keep a value in the conversation's metadata hash."""
        _, meta_key = self.keys(conversation_id)
        with _store_errors():
            await self._client.hset(meta_key, f"note:{key}", value)
            await self._client.expire(meta_key, self._ttl_s)

    async def forget_user(self, user_id: str) -> int:
        """Delete all conversations of the user (and the index of them)."""
        key = self.user_key(user_id)
        with _store_errors():
            ids = [c.decode() if isinstance(c, bytes) else str(c)
                   for c in await self._client.smembers(key)]  # fmt: skip
            keys = [k for cid in ids for k in self.keys(cid)]
            await self._client.delete(key, *keys)
        return len(ids)

    async def recent(self, conversation_id: str) -> list[Turn]:
        """The turns in the window, oldest first."""
        turns_key, _ = self.keys(conversation_id)
        with _store_errors():
            raw = await self._client.lrange(turns_key, 0, -1)
        return [Turn.model_validate_json(item) for item in raw]

    async def turn_count(self, conversation_id: str) -> int:
        """How many turns were ever stored in this conversation (until it expires)."""
        _, meta_key = self.keys(conversation_id)
        with _store_errors():
            count = await self._client.hget(meta_key, "count")
        return int(count) if count is not None else 0

    async def ping(self) -> None:
        """Raise `StoreError` unless Redis answers."""
        with _store_errors():
            await self._client.ping()

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()
