"""The harness schema by version: a database made before versioned migrations is adopted."""

from __future__ import annotations

from importlib import resources

import asyncpg
import pytest

from weir_harness.repository import RunRepository

pytestmark = pytest.mark.integration


async def versions(conn: asyncpg.Connection) -> list[int]:
    rows = await conn.fetch(
        "SELECT version FROM schema_migrations WHERE service = 'harness' ORDER BY version"
    )
    return [r["version"] for r in rows]


async def test_a_database_made_by_the_unversioned_schema_upgrades_and_keeps_its_runs(
    database_url: str,
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        # what the harness created at start-up before versions: the same statements as 0001
        old = resources.files("weir_harness").joinpath("migrations/0001_init.sql").read_text()
        await conn.execute(old)
        await conn.execute(
            "INSERT INTO runs (run_id, conversation_id, status, request)"
            " VALUES ('old-run', 'c', 'running', '{}'::jsonb)"
        )
        for _ in range(2):  # opening again changes nothing
            repo = RunRepository(database_url)
            await repo.open()
            await repo.close()
            assert await versions(conn) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
        assert await conn.fetchval("SELECT run_id FROM runs") == "old-run"
        assert await conn.fetchval("SELECT count(*) FROM outbox") == 0
    finally:
        await conn.close()
