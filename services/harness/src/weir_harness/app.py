"""Wiring of the harness: broker, subscribers, run store, outbox relay, deadline sweeper."""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from fastapi import FastAPI

from weir_common.bus import KafkaCredentials, make_broker, subscriber_options
from weir_common.events import new_id
from weir_common.logs import setup_logging
from weir_common.runtime import service_app
from weir_common.telemetry import setup_tracing
from weir_harness.api import make_router
from weir_harness.handlers import HarnessHandlers
from weir_harness.outbox import OutboxRelay, RelayPolicy
from weir_harness.repository import RunRepository
from weir_harness.service import RunService
from weir_harness.settings import HarnessSettings

log = structlog.get_logger(__name__)


def create_app(settings: HarnessSettings) -> FastAPI:
    """The harness process: consumes requests and results, owns every run."""
    setup_logging("harness", settings.log_level, settings.log_json)
    provider = setup_tracing("harness", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "harness",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    repo = RunRepository(settings.database_url, settings.topics.prefix)
    topics = settings.topics
    relay = OutboxRelay(
        settings.database_url, broker, topics, _relay_policy(settings), writer=repo.writer
    )
    service = RunService(repo, settings)
    handlers = HarnessHandlers(service, relay)
    wait = settings.kafka_fetch_max_wait_ms
    broker.subscriber(
        topics.of("chat.requested"),
        **subscriber_options("weir.harness.requests", fetch_max_wait_ms=wait),
    )(handlers.on_chat)
    broker.subscriber(
        topics.of("tool.confirmation.given"),
        **subscriber_options("weir.harness.confirmations", fetch_max_wait_ms=wait),
    )(handlers.on_confirmation)
    # three consumers share the result types, so the results of many runs are handled side by
    # side, each committed after its transaction (runs lock their own rows); a turn's results
    # spread over all three, and each more consumer would cost the broker polls when idle
    for lane, result_types in RESULT_LANES.items():
        broker.subscriber(
            *(topics.of(t) for t in result_types),
            **subscriber_options(f"weir.harness.results.{lane}", fetch_max_wait_ms=wait),
        )(handlers.on_result)
    # every instance reads the whole catalogue history (its own group); the latest one wins
    broker.subscriber(
        topics.of("tools.catalog.updated"),
        **subscriber_options(f"weir.harness.catalog.{new_id()}", fetch_max_wait_ms=wait),
    )(handlers.on_catalog)
    tasks: list[asyncio.Task[None]] = []

    async def start_tasks() -> None:
        tasks.append(asyncio.create_task(relay.run_forever()))
        tasks.append(asyncio.create_task(sweep_forever(service, relay, settings.sweep_interval_s)))
        tasks.append(asyncio.create_task(scrub_forever(repo, settings)))

    async def stop() -> None:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await repo.close()
        provider.shutdown()

    app = service_app(
        name="harness",
        settings=settings,
        broker=broker,
        on_startup=[repo.open, start_tasks],
        on_shutdown=[stop],
    )
    app.state.repository = repo
    app.include_router(make_router(repo, settings.weir_service_token))
    return app


RESULT_LANES: dict[str, tuple[str, ...]] = {
    "context": ("memory.context.ready", "turn.recorded", "step.failed"),
    "route": ("route.decided", "rag.retrieve.completed", "react.step.decided"),
    "answer": ("answer.generated", "answer.evaluated", "tools.call.completed"),
}
"""The harness's result consumers and the result types each reads (every type once)."""


def _relay_policy(settings: HarnessSettings) -> RelayPolicy:
    return RelayPolicy(
        poll_interval_s=settings.outbox_poll_interval_s,
        backoff_base_s=settings.outbox_backoff_base_s,
        backoff_max_s=settings.outbox_backoff_max_s,
    )


async def scrub_forever(repo: RunRepository, settings: HarnessSettings) -> None:
    """Every `scrub_interval_s`: remove the text of private runs that ended more than
    `private_text_retention_s` ago (a resume within that time still gets the answer), and
    prune the step payloads of runs that ended more than `run_step_retention_days` ago."""
    while True:
        try:
            scrubbed = await repo.scrub_private(settings.private_text_retention_s)
            if scrubbed:
                log.info("runs.private_scrubbed", runs=scrubbed)
            pruned = await repo.prune_steps(settings.run_step_retention_days)
            if pruned:
                log.info("runs.steps_pruned", runs=pruned)
        except Exception:
            log.exception("runs.scrub_failed")
        await asyncio.sleep(settings.scrub_interval_s)


async def sweep_forever(service: RunService, relay: OutboxRelay, interval_s: float) -> None:
    """Retry steps whose retry time or deadline has come, until cancelled.

    The sweep only writes (runs and outbox rows), so a broker outage never stops it.
    """
    while True:
        try:
            relay.hand(await service.sweep())
        except Exception:
            log.exception("sweep.failed")
        await asyncio.sleep(interval_s)
