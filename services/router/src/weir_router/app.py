"""Wiring of the router: broker, subscribers, classifier, model client."""

from __future__ import annotations

import asyncio

import structlog
from fastapi import FastAPI

from weir_common.bus import (
    KafkaCredentials,
    command_subscriber_options,
    make_broker,
    subscriber_options,
)
from weir_common.embeddings import make_embedder
from weir_common.events import new_id
from weir_common.llm import LLMError, LLMSettings, make_llm_client
from weir_common.llm.litellm_support import import_litellm
from weir_common.logs import setup_logging
from weir_common.runtime import service_app
from weir_common.telemetry import setup_tracing
from weir_router.catalog import Catalog
from weir_router.handlers import Planner, RouterHandlers
from weir_router.intent import IntentClassifier
from weir_router.judge import AnswerJudge
from weir_router.planner import LLMPlanner, RulePlanner
from weir_router.route_catalog import CatalogueMatcher
from weir_router.service import AnswerGenerator
from weir_router.settings import RouterSettings
from weir_router.shortlist import Shortlister

log = structlog.get_logger(__name__)


def create_app(settings: RouterSettings, llm_settings: LLMSettings | None = None) -> FastAPI:
    """The router process: routes requests and generates answers."""
    setup_logging("router", settings.log_level, settings.log_json)
    provider = setup_tracing("router", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "router",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    llm = make_llm_client(llm_settings or LLMSettings())
    shortlister = Shortlister(make_embedder, max_tools=settings.planner_max_tools)
    planner: Planner = (
        LLMPlanner(llm, shortlister)
        if llm is not None
        else RulePlanner(shortlister, settings.tool_min_score)
    )
    # routing asks the same shortlister (tool vectors cached, a turn's message embedded once
    # for route and plan) with the same threshold as the offline planner
    matcher = CatalogueMatcher(shortlister, settings.tool_min_score)
    catalog = Catalog()  # one view of the tool catalogue for routing, planning and answering
    handlers = RouterHandlers(
        IntentClassifier(),
        AnswerGenerator(llm, settings, catalog, shortlister),
        broker,
        settings.topics,
        planner=planner,
        catalog=catalog,
        matcher=matcher,
        judge=AnswerJudge(llm),
    )
    topics = settings.topics
    workers = settings.max_concurrent_generations
    wait = settings.kafka_fetch_max_wait_ms
    broker.subscriber(
        topics.of("route.requested"),
        **command_subscriber_options("weir.router.route", workers, fetch_max_wait_ms=wait),
    )(handlers.on_route)
    broker.subscriber(
        topics.of("react.step.requested"),
        **command_subscriber_options("weir.router.plan", workers, fetch_max_wait_ms=wait),
    )(handlers.on_react_step)
    # every instance reads the whole catalogue history (its own group); the latest one wins
    broker.subscriber(
        topics.of("tools.catalog.updated"),
        **subscriber_options(f"weir.router.catalog.{new_id()}", fetch_max_wait_ms=wait),
    )(handlers.on_catalog)
    broker.subscriber(
        topics.of("answer.generate.requested"),
        **command_subscriber_options("weir.router.generate", workers, fetch_max_wait_ms=wait),
    )(handlers.on_generate)
    broker.subscriber(
        topics.of("answer.evaluate.requested"),
        **command_subscriber_options("weir.router.evaluate", workers, fetch_max_wait_ms=wait),
    )(handlers.on_evaluate)

    async def warm_up() -> None:
        # litellm takes seconds to import: pay that before the service reports ready,
        # not on the first user's turn
        if llm is not None:
            await asyncio.to_thread(import_litellm)
        # the route step embeds every turn's message once tools are connected: load the
        # embedding model (and the catalogue baselines' messages) before reporting ready
        try:
            await matcher.warm_up()
        except LLMError as exc:  # a remote embedder may be down: routing by rules still works
            log.warning("router.warm_up.embedder_failed", error=str(exc))

    async def flush_traces() -> None:
        provider.shutdown()

    return service_app(
        name="router",
        settings=settings,
        broker=broker,
        on_startup=[warm_up],
        on_shutdown=[flush_traces],
    )
