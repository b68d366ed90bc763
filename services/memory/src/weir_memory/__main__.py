"""`python -m weir_memory`: settings from the environment, engines checked, then serve."""

from __future__ import annotations

from weir_common.runtime import Check, kafka_check, serve

from .app import create_app
from .repository import ping_redis, redact
from .settings import MemorySettings


def engine_checks(settings: MemorySettings) -> dict[str, Check]:
    """The engines this service needs, each named by where it is expected."""
    bootstrap, redis_url = settings.kafka_bootstrap_servers, settings.redis_url

    async def kafka() -> None:
        await kafka_check(bootstrap)

    async def redis() -> None:
        await ping_redis(redis_url)

    checks: dict[str, Check] = {f"Kafka at {bootstrap}": kafka}
    if settings.stm_backend == "redis":
        checks[f"Redis at {redact(redis_url)}"] = redis
    return checks


def main() -> None:
    """Start the memory service; a stopped engine ends it with one line naming it."""
    settings = MemorySettings()
    serve(create_app(settings), settings, engine_checks(settings))


if __name__ == "__main__":
    main()
