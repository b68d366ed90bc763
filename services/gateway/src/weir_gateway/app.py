"""Wiring of the gateway: FastAPI edge, its reply topic, the WebSocket chat route, the web UI."""

from __future__ import annotations

import asyncio

import structlog
from fastapi import FastAPI, WebSocket, status

from weir_common.bus import KafkaCredentials, make_broker, reply_subscriber_options
from weir_common.logs import setup_logging
from weir_common.metrics import WS_OPEN, WS_OPENED
from weir_common.objects import LocalObjectStore
from weir_common.runtime import service_app
from weir_common.telemetry import setup_tracing
from weir_gateway import (
    auth_api,
    confirm_api,
    conversations_api,
    knowledge_api,
    memory_api,
    run_list_api,
    runs_api,
)
from weir_gateway.auth import AuthError, ws_principal
from weir_gateway.body_limit import BodyLimit
from weir_gateway.doors import openai_api, sse
from weir_gateway.doors.websocket import ChatConnection
from weir_gateway.handlers import ReplyHandler
from weir_gateway.identity import Authenticator
from weir_gateway.internal import InternalClient
from weir_gateway.quotas import Quotas
from weir_gateway.runs_api import look_up
from weir_gateway.service import ReplyHub
from weir_gateway.settings import GatewaySettings
from weir_gateway.tickets import MemoryTickets, RedisTickets, TicketStore
from weir_gateway.web import mount_web

log = structlog.get_logger(__name__)


def create_app(settings: GatewaySettings) -> FastAPI:
    """The gateway process: WebSocket chat in, chat requests out, replies back."""
    setup_logging("gateway", settings.log_level, settings.log_json)
    tickets: TicketStore = (
        RedisTickets.from_url(settings.redis_url, settings.topic_prefix)
        if settings.redis_url
        else MemoryTickets()
    )
    auth = Authenticator(settings, tickets)  # refuses settings that cannot verify anyone
    quotas = Quotas(settings)
    provider = setup_tracing("gateway", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "gateway",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    hub = ReplyHub()
    reply_topic = settings.topics.reply(f"gateway.{settings.instance_id}")
    options = reply_subscriber_options(
        f"weir.gateway.{settings.instance_id}", fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms
    )
    broker.subscriber(reply_topic, **options)(ReplyHandler(hub).on_reply)

    deadlines: list[asyncio.Task[None]] = []

    async def start_deadlines() -> None:
        deadlines.append(asyncio.create_task(_watch_forever(hub, app, settings)))

    async def flush_traces() -> None:
        for task in deadlines:
            task.cancel()
        await app.state.rag.close()
        await tickets.close()
        provider.shutdown()

    app = service_app(
        name="gateway",
        settings=settings,
        broker=broker,
        topics=[reply_topic],
        on_startup=[start_deadlines],
        on_shutdown=[flush_traces],
    )

    rag = InternalClient(
        "the knowledge base", settings.weir_rag_url, token=settings.weir_service_token
    )
    app.state.settings = settings
    app.state.auth = auth
    app.state.quotas = quotas
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.state.hub = hub
    app.state.reply_topic = reply_topic
    app.state.objects = LocalObjectStore.under(settings.data_dir)
    app.state.rag = rag
    app.include_router(auth_api.router)
    app.include_router(knowledge_api.router)
    app.include_router(sse.router)
    app.include_router(openai_api.router)
    app.include_router(memory_api.router)
    app.include_router(run_list_api.router)
    app.include_router(conversations_api.router)
    app.include_router(runs_api.router)
    app.include_router(confirm_api.router)

    @app.websocket("/ws/chat")
    async def chat(ws: WebSocket) -> None:
        try:
            principal = await ws_principal(ws, auth)
        except AuthError as exc:  # accepted first, so the client can read why
            await ws.accept()
            await ws.close(code=status.WS_1008_POLICY_VIOLATION, reason=exc.reason[:120])
            return
        connection = ChatConnection(
            ws,
            principal.user_id,
            hub=hub,
            broker=broker,
            settings=settings,
            runs=app.state.runs,
            quotas=quotas,
        )
        WS_OPENED.inc()
        with WS_OPEN.track_inprogress():
            await connection.serve()

    mount_web(app)
    return app


async def _watch_forever(hub: ReplyHub, app: FastAPI, settings: GatewaySettings) -> None:
    """Once a second: runs quiet for a while are looked up in their record (a reply lost in a
    crash must not leave the client waiting), and runs past their deadline get an `error`
    frame (code `deadline`)."""
    while True:
        await asyncio.sleep(1.0)
        runs: InternalClient = app.state.runs  # the harness client (the memory API opens it)
        for stream in hub.quiet(settings.quiet_run_check_s):
            if await look_up(runs, hub, stream):
                log.info("run.finished_from_record", run_id=stream.run_id)
        for run_id in hub.expire(settings.run_deadline_s):
            log.warning("run.deadline_passed", run_id=run_id, deadline_s=settings.run_deadline_s)
