"""Short-term memory storage: the recent turns of each conversation, behind one interface.

Each conversation keeps its last `window` turns, oldest first, plus a turn count and the run
ids already recorded, so that a redelivered `turn.completed` is stored once. A conversation
expires `ttl_s` seconds after its last write.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from weir_common.events import Turn


class StoreError(RuntimeError):
    """The store could not be reached or refused the operation; retrying may succeed."""


class ShortTermStore(Protocol):
    """The recent turns of each conversation."""

    async def append(self, conversation_id: str, turn: Turn) -> bool:
        """Store `turn` unless its `run_id` was stored before; True when it was new."""
        ...

    async def recent(self, conversation_id: str) -> list[Turn]:
        """The turns in the window, oldest first (empty for an unknown conversation)."""
        ...

    async def turn_count(self, conversation_id: str) -> int:
        """How many turns were ever stored, including those trimmed from the window."""
        ...


# Check-and-append in one step: two consumers handling the same redelivered turn cannot
# both append it. KEYS: turns list, meta hash. ARGV: run field, turn JSON, window, ttl.
_APPEND_SCRIPT = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local n = redis.call('HINCRBY', KEYS[2], 'count', 1)
redis.call('HSET', KEYS[2], ARGV[1], n)
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""


@contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except RedisError as exc:
        raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc


def redis_client(url: str) -> aioredis.Redis:
    """A client that fails fast and never retries: the harness owns retries."""
    return aioredis.Redis.from_url(
        url, socket_connect_timeout=2, socket_timeout=5, retry=Retry(NoBackoff(), 0)
    )


def redact(url: str) -> str:
    """`url` without its password, fit for logs and error lines."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


async def ping_redis(url: str) -> None:
    """Raise unless the Redis server at `url` answers PING."""
    client = redis_client(url)
    try:
        await client.ping()
    finally:
        await client.aclose()


class RedisShortTermStore:
    """Short-term memory in Redis: a list of JSON turns and a metadata hash per conversation.

    Both keys of a conversation share a hash tag, so they live in one slot of a cluster and
    the append script may touch both.
    """

    def __init__(
        self, client: aioredis.Redis, *, window: int, ttl_s: int, prefix: str = "weir:stm:"
    ) -> None:
        self._client = client
        self._window = window
        self._ttl_s = ttl_s
        self._prefix = prefix
        self._append = client.register_script(_APPEND_SCRIPT)

    def keys(self, conversation_id: str) -> tuple[str, str]:
        """The turns list and the metadata hash of one conversation."""
        base = f"{self._prefix}{{{conversation_id}}}"
        return f"{base}:turns", f"{base}:meta"

    async def append(self, conversation_id: str, turn: Turn) -> bool:
        """Store `turn` once per run id, trim to the window and refresh the TTL."""
        args: list[str | int] = [
            f"run:{turn.run_id}",
            turn.model_dump_json(),
            self._window,
            self._ttl_s,
        ]
        with _store_errors():
            added = await self._append(keys=list(self.keys(conversation_id)), args=args)
        return bool(added)

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


@dataclass
class _Conversation:
    turns: deque[Turn]
    run_ids: set[str] = field(default_factory=set)
    count: int = 0
    expires_at: float = 0.0


class InMemoryShortTermStore:
    """Short-term memory in this process: the zero-setup fallback, lost on restart.

    Same semantics as the Redis adapter, including expiry; `clock` (seconds, monotonic) is
    injectable so tests can move time.
    """

    def __init__(
        self, *, window: int, ttl_s: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._window = window
        self._ttl_s = ttl_s
        self._clock = clock
        # Ordered by last write; with one TTL for all, that is also expiry order.
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()

    async def append(self, conversation_id: str, turn: Turn) -> bool:
        """Store `turn` once per run id, trim to the window and refresh the expiry."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        if conv is None:
            conv = _Conversation(turns=deque(maxlen=self._window))
            self._conversations[conversation_id] = conv
        if turn.run_id in conv.run_ids:
            return False
        conv.turns.append(turn)
        conv.run_ids.add(turn.run_id)
        conv.count += 1
        conv.expires_at = self._clock() + self._ttl_s
        self._conversations.move_to_end(conversation_id)
        return True

    async def recent(self, conversation_id: str) -> list[Turn]:
        """The turns in the window, oldest first."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return list(conv.turns) if conv else []

    async def turn_count(self, conversation_id: str) -> int:
        """How many turns were ever stored in this conversation (until it expires)."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return conv.count if conv else 0

    def _evict_expired(self) -> None:
        now = self._clock()
        while self._conversations:
            conv_id, conv = next(iter(self._conversations.items()))
            if conv.expires_at > now:
                return
            del self._conversations[conv_id]
