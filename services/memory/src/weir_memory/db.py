"""The memory service's PostgreSQL pools: connect, create its tables, map failures.

Advisory locks live on connections of their own small pool. A lock holder keeps its
connection for as long as it holds the lock, while the work under the lock asks the main
pool for more: had both come from one pool, as many holders as the pool has connections
would wait forever for one more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import asyncpg

from weir_common.migrations import migrate_package
from weir_common.pg import open_pool

from .repository import StoreError


@contextmanager
def pg_errors() -> Iterator[None]:
    """Turn driver and connection errors into `StoreError` (transient for the harness)."""
    try:
        yield
    except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as exc:
        raise StoreError(f"postgres: {type(exc).__name__}: {exc}") from exc


class Database:
    """A pool over `dsn`, with the schema migrated (`migrations/`) on `open`, and a pool of
    `lock_slots` connections that hold advisory locks (one per turn being written: a turn's
    writes hold its user's lock, see `LongTermMemory.writing`)."""

    def __init__(self, dsn: str, max_size: int = 8, lock_slots: int = 16) -> None:
        self._dsn = dsn
        self._max_size = max_size
        self._lock_slots = lock_slots
        self._pool: asyncpg.Pool | None = None
        self._locks: asyncpg.Pool | None = None

    async def open(self) -> None:
        """Connect and migrate the tables to the latest version."""
        self._pool = await open_pool(self._dsn, min_size=1, max_size=self._max_size)
        self._locks = await open_pool(  # session locks: the full reset releases a stray one
            self._dsn, full_reset=True, min_size=0, max_size=self._lock_slots
        )
        await migrate_package(self._pool, "memory", "weir_memory")

    async def close(self) -> None:
        """Close both pools."""
        for pool in (self._locks, self._pool):
            if pool is not None:
                await pool.close()
        self._pool = self._locks = None

    @property
    def pool(self) -> asyncpg.Pool:
        """The open pool."""
        if self._pool is None:
            raise RuntimeError("Database.open() was not called")
        return self._pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; driver errors become `StoreError`."""
        with pg_errors():
            async with self.pool.acquire() as conn:
                yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection inside one transaction, committed when the block exits normally."""
        with pg_errors():
            async with self.pool.acquire() as conn, conn.transaction():
                yield conn

    @asynccontextmanager
    async def advisory_lock(self, key: str) -> AsyncIterator[None]:
        """Hold the advisory lock `key` across replicas (waits for it; one holder at a time).

        At most `lock_slots` locks are held or awaited at once by this process; more callers
        wait for a slot without holding anything. The lock ends with the block: the pool's
        reset of the connection it takes back (`pg_advisory_unlock_all()`, awaited before
        the block exits; a connection that fails it is closed) releases it, with no round
        trip of its own.
        """
        if self._locks is None:
            raise RuntimeError("Database.open() was not called")
        with pg_errors():
            async with self._locks.acquire() as conn:
                await conn.execute("SELECT pg_advisory_lock(hashtext($1))", key)
                yield
