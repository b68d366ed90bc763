"""Clients and start-up checks for the engines several services share (Redis, PostgreSQL,
Milvus), so every service fails fast the same way and never logs a password."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry


def redact(url: str) -> str:
    """`url` without its password, fit for logs and error lines."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redis_client(url: str) -> aioredis.Redis:
    """A client that fails fast and never retries: the harness owns retries."""
    return aioredis.Redis.from_url(
        url, socket_connect_timeout=2, socket_timeout=5, retry=Retry(NoBackoff(), 0)
    )


async def ping_redis(url: str) -> None:
    """Raise unless the Redis server at `url` answers PING."""
    client = redis_client(url)
    try:
        await client.ping()
    finally:
        await client.aclose()


async def ping_postgres(dsn: str) -> None:
    """Raise unless PostgreSQL at `dsn` accepts a connection."""
    import asyncpg  # noqa: PLC0415 - only services with a database need the driver loaded

    conn = await asyncpg.connect(dsn, timeout=5)
    await conn.close()


#: gRPC options for every Milvus client. pymilvus pings every 10 s even when idle; Milvus
#: Lite's gRPC server allows one ping per 5 min and answers more with GOAWAY (too_many_pings),
#: which kills an idle shared connection and its recovery. Calls carry their own deadline.
#: A channel that lost Milvus retries connecting after 1 s, then 1.6× longer each time (up to
#: 2 min), and fails every call until then: after a 6 s restart, calls failed for 2.5-7 s more,
#: longer than the harness's retries of a step. Capped at 0.5 s they work within 0.15 s.
MILVUS_GRPC_OPTIONS = {
    "grpc.keepalive_time_ms": 300_000,
    "grpc.keepalive_permit_without_calls": False,
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 500,
}


async def ping_milvus(uri: str) -> None:
    """Raise unless the Milvus server at `uri` lists its collections."""

    def probe() -> None:
        from pymilvus import MilvusClient  # noqa: PLC0415 - slow import, only when used

        # dedicated: closed on `close`, not left idle in pymilvus's shared registry for the
        # service's own client to pick up later
        client = MilvusClient(uri=uri, timeout=5, grpc_options=MILVUS_GRPC_OPTIONS, dedicated=True)
        try:
            client.list_collections()
        finally:
            client.close()

    await asyncio.to_thread(probe)


def milvus_not_loaded(exc: BaseException) -> bool:
    """True when Milvus refused a call because the collection is not loaded in memory: after
    a Milvus restart every collection comes back *released* until someone calls ``load``."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # pymilvus's chains can be cycles
        visited.add(id(seen))
        text = str(seen).lower()
        if "released" in text or "not loaded" in text or "load()" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
