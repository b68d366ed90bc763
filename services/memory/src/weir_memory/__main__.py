"""`python -m weir_memory`: settings from the environment, engines checked, then serve."""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

from weir_common.bus import KafkaCredentials
from weir_common.engines import ping_milvus, ping_postgres, ping_redis, redact
from weir_common.runtime import Check, kafka_check, serve

from .app import create_app
from .settings import MemorySettings


def engine_checks(settings: MemorySettings) -> dict[str, Check]:
    """The engines this service needs, each named by where it is expected."""
    bootstrap, redis_url = settings.kafka_bootstrap_servers, settings.redis_url
    dsn, milvus_uri = settings.database_url, settings.milvus_uri

    async def kafka() -> None:
        await kafka_check(bootstrap, KafkaCredentials.of(settings))

    async def redis() -> None:
        await ping_redis(redis_url)

    async def postgres() -> None:
        await ping_postgres(dsn)

    async def milvus() -> None:
        await ping_milvus(milvus_uri)

    checks: dict[str, Check] = {f"Kafka at {bootstrap}": kafka}
    if settings.stm_backend == "redis":
        checks[f"Redis at {redact(redis_url)}"] = redis
    if settings.long_term:
        checks[f"PostgreSQL at {redact(dsn)}"] = postgres
        if settings.vector_backend == "milvus":
            checks[f"Milvus at {milvus_uri}"] = milvus
    return checks


def main() -> None:
    """Start the memory service; a stopped engine ends it with one line naming it."""
    settings = MemorySettings()
    serve(create_app(settings), settings, engine_checks(settings))


if __name__ == "__main__":
    main()
