"""Wiring: settings → store, broker, subscribers, lifespan. No logic lives here."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import FastAPI
from faststream.kafka import KafkaBroker

from weir_common.bus import command_subscriber_options, make_broker, publish
from weir_common.events import MemoryContextRequested, TurnCompleted
from weir_common.logs import setup_logging
from weir_common.runtime import Hook, service_app
from weir_common.telemetry import setup_tracing
from weir_common.topics import Topics

from . import handlers
from .repository import (
    InMemoryShortTermStore,
    RedisShortTermStore,
    ShortTermStore,
    redis_client,
)
from .settings import MemorySettings

GROUP = "weir.memory"


@dataclass(frozen=True)
class StoreWiring:
    """A short-term store and the hooks that open and close its engine."""

    store: ShortTermStore
    on_startup: list[Hook] = field(default_factory=list)
    on_shutdown: list[Hook] = field(default_factory=list)


def make_store(settings: MemorySettings) -> StoreWiring:
    """The short-term store the settings ask for."""
    window, ttl_s = settings.stm_window_turns, settings.stm_ttl_s
    if settings.stm_backend == "memory":
        return StoreWiring(InMemoryShortTermStore(window=window, ttl_s=ttl_s))
    store = RedisShortTermStore(redis_client(settings.redis_url), window=window, ttl_s=ttl_s)
    return StoreWiring(store, on_startup=[store.ping], on_shutdown=[store.close])


def register_subscribers(
    broker: KafkaBroker,
    topics: Topics,
    store: ShortTermStore,
    workers: int = 16,
    fetch_max_wait_ms: int = 500,
) -> None:
    """Subscribe the memory handlers on `broker`, publishing each result after the work."""

    async def on_context_requested(cmd: MemoryContextRequested) -> None:
        await publish(broker, topics, await handlers.provide_context(cmd, store))

    async def on_turn_completed(cmd: TurnCompleted) -> None:
        await publish(broker, topics, await handlers.remember_turn(cmd, store))

    # registered by call rather than as decorators: with `**options` mypy cannot pick
    # `subscriber`'s overload and would see the handlers as untyped
    broker.subscriber(
        topics.of("memory.context.requested"),
        **command_subscriber_options(
            f"{GROUP}.context", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(on_context_requested)
    broker.subscriber(
        topics.of("turn.completed"),
        **command_subscriber_options(
            f"{GROUP}.turns", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(on_turn_completed)


def create_app(settings: MemorySettings, wiring: StoreWiring | None = None) -> FastAPI:
    """The memory service as an ASGI app; `wiring` overrides the store the settings name."""
    setup_logging("memory", settings.log_level, settings.log_json)
    provider = setup_tracing("memory", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(settings.kafka_bootstrap_servers, "memory", provider)
    wiring = wiring or make_store(settings)
    register_subscribers(
        broker,
        settings.topics,
        wiring.store,
        settings.max_concurrency,
        settings.kafka_fetch_max_wait_ms,
    )
    return service_app(
        name="memory",
        settings=settings,
        broker=broker,
        on_startup=wiring.on_startup,
        on_shutdown=wiring.on_shutdown,
    )
