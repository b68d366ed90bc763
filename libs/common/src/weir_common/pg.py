"""PostgreSQL connection pools of the services.

asyncpg resets every connection it takes back (``SELECT pg_advisory_unlock_all(); CLOSE ALL;
UNLISTEN *; RESET ALL``): one more round trip per acquire, several per handled event. The
services' pools keep no session state (no ``SET``, no ``LISTEN``, no cursor or session lock
outliving its block: transactions use ``pg_advisory_xact_lock``), so `open_pool` only ends
an open transaction, which asyncpg does before any custom reset. A pool whose connections
hold session advisory locks keeps the full reset (`open_pool(..., full_reset=True)`).

Every pool and `connect`ion plans with ``random_page_cost`` 1.1 (PostgreSQL's default, 4,
prices a disk seek). The services' statements look rows up by key in tables whose hot part is
in memory, and a statement asyncpg prepared while its table was small keeps its generic plan
until the table is analysed again. At 4 that plan reads the whole table: the harness's result
write, planned over a few runs, scanned all of them (~360 buffers a call at 2,000 runs
instead of ~30), and the outbox relay's delete, planned over an empty outbox, read every dead
row of it (~240 buffers a call). At 1.1 the planner takes the index from the first rows on.
"""

from __future__ import annotations

from typing import Any

import asyncpg

#: the planner settings of every service connection (see the module docstring)
PLANNER_SETTINGS = {"random_page_cost": "1.1"}


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """The reset of a pool without session state: nothing beyond asyncpg's rollback."""


async def open_pool(dsn: str, *, full_reset: bool = False, **options: Any) -> asyncpg.Pool:
    """An asyncpg pool over `dsn` (`options` as `asyncpg.create_pool` takes them)."""
    if not full_reset:
        options["reset"] = _keep_session
    return await asyncpg.create_pool(dsn, **_planned(options))


async def connect(dsn: str, **options: Any) -> asyncpg.Connection:
    """One connection over `dsn` outside a pool (`options` as `asyncpg.connect` takes them)."""
    return await asyncpg.connect(dsn, **_planned(options))


def _planned(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with `PLANNER_SETTINGS` under any server settings they give."""
    given = options.get("server_settings", {})
    return {**options, "server_settings": {**PLANNER_SETTINGS, **given}}
