"""The services' PostgreSQL connections (real PostgreSQL): a statement prepared while its table
was small still reads by key once the table has grown, before anyone analyses it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from weir_common.pg import connect, open_pool
from weir_deploy.pytest_plugin import fresh_database

pytestmark = pytest.mark.integration

# the harness's result write in small: a snapshot written by key, joined to its parameters
_WRITE = (
    "PREPARE write(text[], text[]) AS UPDATE runs SET state = r.state"
    " FROM unnest($1, $2) AS r(run_id, state) WHERE runs.run_id = r.run_id"
)


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    async with fresh_database(postgres_url, "pg") as url:
        yield url


async def _plan_after_growth(conn: asyncpg.Connection) -> str:
    """The cached plan of `write`, prepared over 3 rows, once the table holds 3,000."""
    await conn.execute("CREATE TABLE runs (run_id text PRIMARY KEY, state text NOT NULL)")
    await conn.execute(
        "INSERT INTO runs SELECT 'r' || g, repeat('x', 500) FROM generate_series(1, 3) g"
    )
    # PostgreSQL chooses to keep a generic plan when it costs no more than planning anew
    # (it did for the harness's write, a statement of several parts); here it is made to
    await conn.execute("SET plan_cache_mode = force_generic_plan")
    await conn.execute(_WRITE)
    await conn.execute("EXECUTE write('{r1}', '{y}')")
    await conn.execute(
        "INSERT INTO runs SELECT 'r' || g, repeat('x', 500) FROM generate_series(4, 3000) g"
    )
    rows = await conn.fetch("EXPLAIN (COSTS OFF) EXECUTE write('{r2}', '{z}')")
    return "\n".join(r[0] for r in rows)


async def test_a_pool_statement_reads_by_key_after_its_table_grew(database_url: str) -> None:
    pool = await open_pool(database_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            plan = await _plan_after_growth(conn)
    finally:
        await pool.close()
    assert "Index Scan using runs_pkey" in plan, plan
    assert "Seq Scan on runs" not in plan, plan


async def test_a_lone_connection_plans_the_same_way(database_url: str) -> None:
    conn = await connect(database_url)  # the outbox relay's
    try:
        plan = await _plan_after_growth(conn)
    finally:
        await conn.close()
    assert "Index Scan using runs_pkey" in plan, plan


async def test_without_the_pool_setting_the_same_plan_reads_the_whole_table(
    database_url: str,
) -> None:
    # the reason for the setting: at PostgreSQL's default random_page_cost the plan made
    # over a small table scans all of it for every write
    conn = await asyncpg.connect(database_url)
    try:
        plan = await _plan_after_growth(conn)
    finally:
        await conn.close()
    assert "Seq Scan on runs" in plan, plan
