"""`python -m weir_tools`: settings from the environment, engines checked, then serve.

MCP servers are not engines: one that is down is reported in the catalogue, and the
service starts anyway.
"""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

from weir_common.bus import KafkaCredentials
from weir_common.engines import redact, redis_client
from weir_common.runtime import Check, kafka_check, serve

from .app import create_app
from .repository import RedisResultStore
from .settings import ToolsSettings


def engine_checks(settings: ToolsSettings) -> dict[str, Check]:
    """The engines this service needs, each named by where it is expected."""
    bootstrap, redis_url = settings.kafka_bootstrap_servers, settings.redis_url

    async def kafka() -> None:
        await kafka_check(bootstrap, KafkaCredentials.of(settings))

    checks: dict[str, Check] = {f"Kafka at {bootstrap}": kafka}
    if redis_url is not None:

        async def redis() -> None:
            store = RedisResultStore(redis_client(redis_url), ttl_s=1)
            try:
                await store.ping()
            finally:
                await store.close()

        checks[f"Redis at {redact(redis_url)}"] = redis
    return checks


def main() -> None:
    """Start the tools service; a stopped engine ends it with one line naming it."""
    settings = ToolsSettings()
    serve(create_app(settings), settings, engine_checks(settings))


if __name__ == "__main__":
    main()
