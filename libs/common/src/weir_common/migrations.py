"""Versioned schema migrations for the services that own PostgreSQL tables.

A service ships numbered SQL files as package resources (`migrations/0001_init.sql`,
`migrations/0002_outbox.sql`, ...). `migrate` applies, in order, those not yet recorded in
`schema_migrations(service, version, name, applied_at)`, each in its own transaction with its
record, so a crash half-way leaves the database at the last whole version.

One migrator at a time per database: several services (and replicas) may share one
database, so a single advisory lock covers them all. A migration's SQL may only rely on the
versions before it; version 0001 of a service that used to create its tables with
`CREATE TABLE IF NOT EXISTS` keeps doing so, so a database made by that older code is
adopted without change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg
import structlog

log = structlog.get_logger(__name__)

# (class, id) of the session advisory lock that serializes migrators; the two-key space
# keeps it apart from locks taken with one bigint key.
_LOCK = (7260, 0)
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    service    text NOT NULL,
    version    integer NOT NULL,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (service, version)
)
"""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step of a service's schema."""

    version: int
    name: str
    sql: str


def package_migrations(package: str, folder: str = "migrations") -> list[Migration]:
    """The migrations shipped in `package`/`folder`, by version; versions must run 1, 2, 3..."""
    found: list[Migration] = []
    for entry in resources.files(package).joinpath(folder).iterdir():
        match = _FILE.match(entry.name)
        if match is not None:
            found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{package}/{folder}: versions must be 1..n without gaps: {versions}")
    return found


async def migrate(conn: asyncpg.Connection, service: str, migrations: list[Migration]) -> list[int]:
    """Apply the migrations of `service` not applied yet; the versions applied now.

    Waits for any other migrator of the database first. Applying again is a no-op.
    """
    await conn.execute("SELECT pg_advisory_lock($1, $2)", *_LOCK)
    try:
        await conn.execute(_TABLE)
        done = {
            row["version"]
            for row in await conn.fetch(
                "SELECT version FROM schema_migrations WHERE service = $1", service
            )
        }
        applied = [m.version for m in migrations if m.version not in done]
        for migration in migrations:
            if migration.version not in done:
                await _apply(conn, service, migration)
        return applied
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1, $2)", *_LOCK)


async def _apply(conn: asyncpg.Connection, service: str, migration: Migration) -> None:
    async with conn.transaction():
        await conn.execute(migration.sql)
        await conn.execute(
            "INSERT INTO schema_migrations (service, version, name) VALUES ($1, $2, $3)",
            service,
            migration.version,
            migration.name,
        )
    log.info("schema.migrated", service=service, version=migration.version, name=migration.name)


async def migrate_package(pool: asyncpg.Pool, service: str, package: str) -> list[int]:
    """Apply the migrations shipped in `package`/migrations to the pool's database."""
    async with pool.acquire() as conn:
        return await migrate(conn, service, package_migrations(package))
