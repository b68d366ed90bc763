"""How every service process starts: pre-flight checks, broker, health endpoints, uvicorn.

Each service is a small FastAPI app whose lifespan starts its KafkaBroker; `/health` answers
once the process is up; `/ready` answers 200 only while its engines answer (the pre-flight
checks, run again, cached) and its subscribers hold partitions, else 503
(`weir_common.readiness`); `/metrics` serves Prometheus metrics behind the service credential
(`weir_common.metrics`). An engine that is down at start-up ends the process with one line
naming it, not a traceback.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

import structlog
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from faststream.kafka import KafkaBroker

from weir_common import heap
from weir_common.bus import KafkaCredentials, client_options, ensure_topics, wait_until_assigned
from weir_common.metrics.http import HTTPMetrics, metrics_router
from weir_common.quiet_server import QuietServer, listening_socket
from weir_common.readiness import Check, Readiness
from weir_common.settings import WeirSettings

log = structlog.get_logger(__name__)

Hook = Callable[[], Awaitable[None]]
__all__ = [
    "Check",
    "EngineUnavailableError",
    "Hook",
    "kafka_check",
    "preflight",
    "serve",
    "service_app",
    "watch_engines",
]


class EngineUnavailableError(RuntimeError):
    """An engine the service needs did not answer at start-up."""


async def kafka_check(bootstrap: str, credentials: KafkaCredentials | None = None) -> None:
    """Fail unless a Kafka broker answers metadata requests at `bootstrap` (and, with SASL,
    accepts `credentials`)."""
    from aiokafka.admin import AIOKafkaAdminClient  # noqa: PLC0415

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=5000, **client_options(credentials)
    )
    try:
        await asyncio.wait_for(admin.start(), timeout=10)
    finally:
        await admin.close()


async def preflight(checks: Mapping[str, Check], timeout_s: float = 15.0) -> None:
    """Run every engine check; raise `EngineUnavailableError` naming the first that fails."""
    for name, check in checks.items():
        try:
            await asyncio.wait_for(check(), timeout=timeout_s)
        except Exception as exc:
            detail = str(exc) or type(exc).__name__
            raise EngineUnavailableError(f"{name} is not reachable: {detail}") from exc


def service_app(
    *,
    name: str,
    settings: WeirSettings,
    broker: KafkaBroker,
    topics: Sequence[str] = (),
    on_startup: Sequence[Hook] = (),
    on_shutdown: Sequence[Hook] = (),
) -> FastAPI:
    """A FastAPI app whose lifespan creates topics, starts hooks, then the broker."""
    readiness = Readiness(broker)

    @asynccontextmanager
    async def lifespan(this: FastAPI) -> AsyncIterator[None]:
        await ensure_topics(
            settings.kafka_bootstrap_servers,
            [
                *settings.topics.all_fixed(),
                *topics,
                *(settings.topics.dead_letter(t) for t in topics),
            ],
            settings.topic_partitions,
            replication_factor=settings.topic_replication_factor,
            min_insync_replicas=settings.topic_min_insync_replicas,
            credentials=KafkaCredentials.of(settings),
        )
        for hook in on_startup:
            await hook()
        await broker.start()
        if not await wait_until_assigned(broker):
            log.warning("service.partitions_unassigned", hint="more members than partitions?")
        readiness.started = True
        # a service process (`serve`) held collection through start-up (`weir_common.heap`)
        frozen = heap.settle() if getattr(this.state, "settle_heap", False) else None
        log.info("service.started", port=settings.service_port, frozen_objects=frozen)
        try:
            yield
        finally:
            readiness.started = False
            await broker.stop()
            for hook in on_shutdown:
                await hook()
            log.info("service.stopped")

    app = FastAPI(title=f"weir {name}", lifespan=lifespan)
    app.state.broker = broker
    app.state.readiness = readiness
    app.add_middleware(HTTPMetrics)
    app.include_router(metrics_router(broker, settings.weir_service_token))

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "service": name}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        report = await readiness.report()
        return JSONResponse(report.body(), status_code=200 if report.ready else 503)

    return app


def watch_engines(app: FastAPI, checks: Mapping[str, Check]) -> None:
    """Let `/ready` of a `service_app` ask these engines (the pre-flight checks) again."""
    readiness = getattr(app.state, "readiness", None)
    if isinstance(readiness, Readiness):
        readiness.checks = checks


def serve(
    app: FastAPI,
    settings: WeirSettings,
    checks: Mapping[str, Check],
    *,
    ws_max_size: int = 16 * 1024 * 1024,
) -> None:
    """Pre-flight the engines, then serve `app` until SIGINT/SIGTERM (WebSocket messages
    larger than `ws_max_size` close the socket with 1009). The garbage collector is held
    until the app has started, then its heap frozen (`weir_common.heap`)."""
    heap.hold()
    app.state.settle_heap = True
    watch_engines(app, checks)
    try:
        asyncio.run(preflight(checks))
    except EngineUnavailableError as exc:
        print(f"weir: cannot start: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    # bind before the lifespan starts: a port chosen for us must not be lost to one of our
    # own outgoing connections while the broker starts
    try:
        sock = listening_socket(settings.service_host, settings.service_port)
    except OSError as exc:
        print(f"weir: cannot start: port {settings.service_port} is taken: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", ws_max_size=ws_max_size
    )
    QuietServer(config).run(sockets=[sock])
