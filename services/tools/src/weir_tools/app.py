"""Wiring: settings → result store, MCP servers, built-ins, broker, subscribers, HTTP routes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import httpx
from fastapi import FastAPI
from faststream.kafka import KafkaBroker

from weir_common.bus import KafkaCredentials, command_subscriber_options, make_broker
from weir_common.engines import redis_client
from weir_common.logs import setup_logging
from weir_common.runtime import Hook, service_app
from weir_common.telemetry import setup_tracing
from weir_common.topics import Topics

from .api import add_routes
from .builtins import BUILTIN, TIME, http_builtins
from .catalog import CatalogPublisher
from .confirm import ConfirmRules
from .handlers import ToolsHandlers
from .mcp_manager import McpManager
from .repository import MemoryResultStore, RedisResultStore, ResultStore
from .service import ToolService
from .settings import ToolsSettings

GROUP = "weir.tools"


@dataclass
class ToolsWiring:
    """The tool service and the hooks that open and close what it uses."""

    service: ToolService
    on_startup: list[Hook] = field(default_factory=list)
    on_shutdown: list[Hook] = field(default_factory=list)


def make_store(settings: ToolsSettings) -> tuple[ResultStore, list[Hook]]:
    """Redis when `REDIS_URL` is set (with its ping as a start-up hook), else the LRU."""
    if settings.redis_url is None:
        return MemoryResultStore(ttl_s=settings.result_ttl_s), []
    store = RedisResultStore(redis_client(settings.redis_url), ttl_s=settings.result_ttl_s)
    return store, [store.ping]


def make_service(
    settings: ToolsSettings, on_change: Callable[[], Awaitable[None]] | None = None
) -> ToolsWiring:
    """The tool service the settings describe; `on_change` runs when a server (dis)connects."""
    client = httpx.AsyncClient(follow_redirects=True)
    rules = ConfirmRules.of(settings.tools_confirm, settings.tools_no_confirm)
    builtins = [
        replace(b, info=rules.apply(b.info, False, f"{BUILTIN}.{b.info.name}"))
        for b in [TIME, *http_builtins(settings, client)]
    ]
    mcp = McpManager(
        settings.mcp_servers,
        reserved=[b.info.name for b in builtins],
        backoff_s=settings.reconnect_backoff_s,
        confirm=rules,
        on_change=on_change,
    )
    store, store_hooks = make_store(settings)
    service = ToolService(builtins, mcp, store, max_result_chars=settings.max_result_chars)
    return ToolsWiring(
        service,
        on_startup=[*store_hooks, service.start],
        on_shutdown=[service.close, client.aclose],
    )


def register_subscribers(
    broker: KafkaBroker,
    topics: Topics,
    service: ToolService,
    workers: int = 16,
    fetch_max_wait_ms: int = 500,
) -> None:
    """Subscribe the call handler on `broker`, publishing each result after the work."""
    handlers = ToolsHandlers(service, broker, topics)
    # registered by call rather than as a decorator: with `**options` mypy cannot pick
    # `subscriber`'s overload and would see the handler as untyped
    broker.subscriber(
        topics.of("tools.call.requested"),
        **command_subscriber_options(
            f"{GROUP}.calls", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(handlers.on_call)


def create_app(settings: ToolsSettings) -> FastAPI:
    """The tools service as an ASGI app."""
    setup_logging("tools", settings.log_level, settings.log_json)
    provider = setup_tracing("tools", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "tools",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    publisher = CatalogPublisher(broker, settings.topics)
    wiring = make_service(settings, on_change=publisher.changed)
    service = wiring.service
    publisher.source = service.catalog
    register_subscribers(
        broker,
        settings.topics,
        service,
        settings.max_concurrency,
        settings.kafka_fetch_max_wait_ms,
    )

    async def start_catalog() -> None:
        publisher.start(service.refresh, settings.catalog_interval_s)

    async def stop() -> None:
        await publisher.stop()
        for hook in wiring.on_shutdown:
            await hook()
        provider.shutdown()

    app = service_app(
        name="tools",
        settings=settings,
        broker=broker,
        on_startup=[*wiring.on_startup, start_catalog],
        on_shutdown=[stop],
    )
    app.state.tools = service
    add_routes(app, service, settings.weir_service_token)
    return app
