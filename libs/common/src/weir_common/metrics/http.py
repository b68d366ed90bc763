"""`GET /metrics` and the HTTP middleware, wired into every service by `service_app`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from fastapi import APIRouter, Response
from faststream.kafka import KafkaBroker
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from weir_common.metrics import CONSUMER_LAG, HTTP_REQUESTS, HTTP_SECONDS
from weir_common.service_auth import Token, require_service_token


def _consumers(broker: KafkaBroker) -> list[Any]:
    found: list[Any] = []
    for sub in broker.subscribers:
        group = getattr(sub, "consumer_subgroup", None) or [getattr(sub, "consumer", None)]
        found.extend(c for c in group if c is not None)
    return found


async def sample_consumer_lag(broker: KafkaBroker, timeout_s: float = 2.0) -> None:
    """Set `weir_consumer_lag` for every partition the broker's consumers hold now."""
    CONSUMER_LAG.clear()  # partitions move between members: report only the held ones
    for consumer in _consumers(broker):
        group = str(getattr(consumer, "_group_id", None) or "")
        for tp in consumer.assignment():
            highwater = consumer.highwater(tp)
            if highwater is None:  # no fetch answered yet
                continue
            with contextlib.suppress(Exception):
                position = await asyncio.wait_for(consumer.position(tp), timeout_s)
                lag = max(int(highwater) - int(position), 0)
                CONSUMER_LAG.labels(group, tp.topic, str(tp.partition)).set(lag)


def metrics_router(broker: KafkaBroker, token: Token) -> APIRouter:
    """`GET /metrics` in Prometheus text format, behind the service credential."""
    router = APIRouter(dependencies=[require_service_token(token)])

    @router.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        await sample_consumer_lag(broker)
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return router


class HTTPMetrics:
    """ASGI middleware counting HTTP requests by method, route template and status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            HTTP_REQUESTS.labels(method, route, str(status)).inc()
            HTTP_SECONDS.labels(method, route).observe(time.perf_counter() - started)
