"""`python -m weir_harness`: run the harness until interrupted."""

from __future__ import annotations

import asyncpg

from weir_common.runtime import kafka_check, serve
from weir_harness.app import create_app
from weir_harness.settings import HarnessSettings


async def _postgres_check(dsn: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    await conn.close()


def main() -> None:
    """Check the engines, then serve."""
    settings = HarnessSettings()
    serve(
        create_app(settings),
        settings,
        {
            f"Kafka at {settings.kafka_bootstrap_servers}": lambda: kafka_check(
                settings.kafka_bootstrap_servers
            ),
            f"PostgreSQL at {settings.database_url}": lambda: _postgres_check(
                settings.database_url
            ),
        },
    )


if __name__ == "__main__":
    main()
