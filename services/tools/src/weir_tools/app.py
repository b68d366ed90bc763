"""Wiring: settings → result store, MCP servers, built-ins, broker, subscribers, HTTP routes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI, HTTPException
from faststream.kafka import KafkaBroker

from weir_common.bus import KafkaCredentials, command_subscriber_options, make_broker, publish
from weir_common.engines import redis_client
from weir_common.events import ToolsCallRequested
from weir_common.logs import setup_logging
from weir_common.runtime import Hook, service_app
from weir_common.service_auth import Token, require_service_token
from weir_common.telemetry import setup_tracing
from weir_common.topics import Topics

from . import handlers
from .builtins import BUILTIN, TIME, http_builtins
from .catalog import CatalogPublisher
from .confirm import ConfirmRules
from .mcp_manager import McpManager
from .models import CallRequest, CallResponse
from .repository import MemoryResultStore, RedisResultStore, ResultStore, StoreError
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

    async def on_call_requested(cmd: ToolsCallRequested) -> None:
        await publish(broker, topics, await handlers.call_tool(cmd, service))

    # registered by call rather than as a decorator: with `**options` mypy cannot pick
    # `subscriber`'s overload and would see the handler as untyped
    broker.subscriber(
        topics.of("tools.call.requested"),
        **command_subscriber_options(
            f"{GROUP}.calls", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(on_call_requested)


def add_routes(app: FastAPI, service: ToolService, token: Token) -> None:
    """`GET /internal/catalog` and `POST /internal/call`, for direct calls and benchmarks,
    and `DELETE /internal/users/{user_id}/calls` ("forget me"); all behind the service
    credential `token`."""
    router = APIRouter(prefix="/internal", dependencies=[require_service_token(token)])

    @router.get("/catalog")
    async def catalog() -> dict[str, Any]:
        """The current catalogue: tools and the state of every server."""
        current = service.catalog()
        return current.model_dump(mode="json", include={"tools", "servers"})

    @router.post("/call")
    async def call(request: CallRequest) -> CallResponse:
        """Call one tool and wait for its result."""
        try:
            return await handlers.call_direct(request, service)
        except StoreError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc

    @router.delete("/users/{user_id}/calls")
    async def forget_calls(user_id: str) -> dict[str, Any]:
        """ "Forget me": the user's stored call results and in-progress markers."""
        try:
            return {"user_id": user_id, "calls_deleted": await service.forget_user(user_id)}
        except StoreError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc

    app.include_router(router)


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
