"""Versioned migrations on a real PostgreSQL: upgrade, re-apply, concurrent migrators."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from weir_common.migrations import Migration, migrate, package_migrations
from weir_deploy.pytest_plugin import fresh_database

# Not idempotent on purpose: applying one of them twice fails.
FIRST = Migration(1, "init", "CREATE TABLE items (id text PRIMARY KEY)")
SECOND = Migration(2, "colour", "ALTER TABLE items ADD COLUMN colour text")
SLOW = Migration(2, "slow", "SELECT pg_sleep(0.3); CREATE TABLE slow (id int)")


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    async with fresh_database(postgres_url, "migrations") as url:
        yield url


async def connect(url: str) -> asyncpg.Connection:
    return await asyncpg.connect(url)


async def recorded(conn: asyncpg.Connection, service: str) -> list[int]:
    rows = await conn.fetch(
        "SELECT version FROM schema_migrations WHERE service = $1 ORDER BY version", service
    )
    return [r["version"] for r in rows]


@pytest.mark.integration
async def test_a_database_at_an_older_version_gets_only_the_newer_migrations(
    database_url: str,
) -> None:
    conn = await connect(database_url)
    try:
        assert await migrate(conn, "svc", [FIRST]) == [1]
        await conn.execute("INSERT INTO items (id) VALUES ('kept')")
        assert await migrate(conn, "svc", [FIRST, SECOND]) == [2]
        assert await conn.fetchval("SELECT id FROM items WHERE colour IS NULL") == "kept"
        assert await recorded(conn, "svc") == [1, 2]
    finally:
        await conn.close()


@pytest.mark.integration
async def test_applying_twice_is_a_no_op_and_services_keep_their_own_versions(
    database_url: str,
) -> None:
    conn = await connect(database_url)
    try:
        assert await migrate(conn, "svc", [FIRST, SECOND]) == [1, 2]
        assert await migrate(conn, "svc", [FIRST, SECOND]) == []
        other = Migration(1, "init", "CREATE TABLE others (id text)")
        assert await migrate(conn, "other", [other]) == [1]
        assert await recorded(conn, "svc") == [1, 2]
        assert await recorded(conn, "other") == [1]
    finally:
        await conn.close()


@pytest.mark.integration
async def test_two_concurrent_migrators_apply_each_migration_once(database_url: str) -> None:
    first, second = await connect(database_url), await connect(database_url)
    try:
        outcomes = await asyncio.gather(
            migrate(first, "svc", [FIRST, SLOW]), migrate(second, "svc", [FIRST, SLOW])
        )
        assert sorted(outcomes) == [[], [1, 2]]
        assert await recorded(first, "svc") == [1, 2]
    finally:
        await first.close()
        await second.close()


@pytest.mark.integration
async def test_a_failed_migration_leaves_the_last_whole_version(database_url: str) -> None:
    conn = await connect(database_url)
    broken = Migration(2, "broken", "CREATE TABLE half (id int); SELECT * FROM missing")
    try:
        with pytest.raises(asyncpg.UndefinedTableError):
            await migrate(conn, "svc", [FIRST, broken])
        assert await recorded(conn, "svc") == [1]
        assert await conn.fetchval("SELECT to_regclass('half')") is None
        assert await migrate(conn, "svc", [FIRST, SECOND]) == [2]
    finally:
        await conn.close()


@pytest.mark.unit
def test_package_migrations_are_read_in_version_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "pkg_ok" / "migrations"
    folder.mkdir(parents=True)
    (tmp_path / "pkg_ok" / "__init__.py").write_text("")
    (folder / "0002_second.sql").write_text("SELECT 2")
    (folder / "0001_first.sql").write_text("SELECT 1")
    (folder / "README.txt").write_text("not a migration")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert package_migrations("pkg_ok") == [
        Migration(1, "first", "SELECT 1"),
        Migration(2, "second", "SELECT 2"),
    ]


@pytest.mark.unit
def test_a_gap_in_the_versions_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "pkg_gap" / "migrations"
    folder.mkdir(parents=True)
    (tmp_path / "pkg_gap" / "__init__.py").write_text("")
    (folder / "0001_first.sql").write_text("SELECT 1")
    (folder / "0003_third.sql").write_text("SELECT 3")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="without gaps"):
        package_migrations("pkg_gap")
