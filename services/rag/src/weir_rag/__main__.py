"""`python -m weir_rag`: run the knowledge service until interrupted."""

from __future__ import annotations

import asyncio

import asyncpg
from pymilvus import MilvusClient

from weir_common.runtime import kafka_check, serve
from weir_rag.app import create_app
from weir_rag.settings import RagSettings


async def _postgres_check(dsn: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    await conn.close()


async def _milvus_check(uri: str) -> None:
    def probe() -> None:
        client = MilvusClient(uri=uri, timeout=5)
        client.list_collections()
        client.close()

    await asyncio.to_thread(probe)


def main() -> None:
    """Check the engines, then serve."""
    settings = RagSettings()
    bootstrap = settings.kafka_bootstrap_servers
    serve(
        create_app(settings),
        settings,
        {
            f"Kafka at {bootstrap}": lambda: kafka_check(bootstrap),
            f"PostgreSQL at {settings.database_url}": lambda: _postgres_check(
                settings.database_url
            ),
            f"Milvus at {settings.milvus_uri}": lambda: _milvus_check(settings.milvus_uri),
        },
    )


if __name__ == "__main__":
    main()
