"""The memory service's PostgreSQL pool: connect, create its tables, map failures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from importlib import resources

import asyncpg

from .repository import StoreError

# one migrator at a time when several memory replicas start together
_MIGRATION_LOCK = 7262


@contextmanager
def pg_errors() -> Iterator[None]:
    """Turn driver and connection errors into `StoreError` (transient for the harness)."""
    try:
        yield
    except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as exc:
        raise StoreError(f"postgres: {type(exc).__name__}: {exc}") from exc


class Database:
    """A pool over `dsn`, with the tables of `schema.sql` created on `open`."""

    def __init__(self, dsn: str, max_size: int = 8) -> None:
        self._dsn = dsn
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        """Connect and create the tables if they are missing."""
        self._pool = await asyncpg.create_pool(self._dsn, min_size=1, max_size=self._max_size)
        schema = resources.files("weir_memory").joinpath("schema.sql").read_text()
        async with self._pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
            try:
                await conn.execute(schema)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

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
