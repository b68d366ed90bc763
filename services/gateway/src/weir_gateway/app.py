"""Wiring of the gateway: FastAPI edge, its reply topic, the WebSocket chat route."""

from __future__ import annotations

from fastapi import FastAPI, WebSocket

from weir_common.bus import make_broker, subscriber_options
from weir_common.logs import setup_logging
from weir_common.runtime import service_app
from weir_common.telemetry import setup_tracing
from weir_gateway.handlers import ChatConnection, ReplyHandler
from weir_gateway.service import ReplyHub
from weir_gateway.settings import GatewaySettings


def create_app(settings: GatewaySettings) -> FastAPI:
    """The gateway process: WebSocket chat in, chat requests out, replies back."""
    setup_logging("gateway", settings.log_level, settings.log_json)
    provider = setup_tracing("gateway", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(settings.kafka_bootstrap_servers, "gateway", provider)
    hub = ReplyHub()
    reply_topic = settings.topics.reply(f"gateway.{settings.instance_id}")
    options = subscriber_options(
        f"weir.gateway.{settings.instance_id}", fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms
    )
    broker.subscriber(reply_topic, **options)(ReplyHandler(hub).on_reply)

    async def flush_traces() -> None:
        provider.shutdown()

    app = service_app(
        name="gateway",
        settings=settings,
        broker=broker,
        topics=[reply_topic],
        on_shutdown=[flush_traces],
    )

    @app.websocket("/ws/chat")
    async def chat(ws: WebSocket) -> None:
        user = ws.headers.get("x-user-id") or ws.query_params.get("user") or settings.default_user
        await ChatConnection(ws, user, hub=hub, broker=broker, settings=settings).serve()

    return app
