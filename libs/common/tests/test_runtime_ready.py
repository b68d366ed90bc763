"""`/ready` of a real service app follows its engines and its consumers; `/metrics` is
behind the service credential and samples the consumers' lag. In-process app on the session
Kafka, with a private Redis of the test's own that it stops and starts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from pydantic import SecretStr

from weir_common.bus import make_broker, subscriber_options
from weir_common.events import ChatRequested, new_id
from weir_common.runtime import service_app, watch_engines
from weir_common.settings import WeirSettings
from weir_deploy.base import free_port
from weir_deploy.redis import RedisEngine, ping

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOKEN = "ready-test-token"


async def _ready(http: httpx.AsyncClient, want: int) -> dict[str, object]:
    """`/ready` once it answers `want` (the engine states are cached for a moment)."""
    for _ in range(50):
        answer = await http.get("/ready")
        if answer.status_code == want:
            body: dict[str, object] = answer.json()
            return body
        await asyncio.sleep(0.2)
    raise AssertionError(f"/ready never answered {want}: {answer.status_code} {answer.text}")


async def test_ready_follows_the_engines_and_metrics_need_the_credential(
    stack_env: dict[str, str], tmp_path: Path
) -> None:
    redis = RedisEngine(tmp_path, free_port())
    await redis.start()
    settings = WeirSettings(
        kafka_bootstrap_servers=stack_env["KAFKA_BOOTSTRAP_SERVERS"],
        topic_prefix=f"ready{new_id()[:8]}.",
        topic_partitions=1,
        weir_service_token=SecretStr(TOKEN),
    )
    broker = make_broker(settings.kafka_bootstrap_servers, "readytest", TracerProvider())
    topic = settings.topics.of("chat.requested")

    async def on_chat(event: ChatRequested) -> None:
        return None

    broker.subscriber(topic, **subscriber_options("weir.readytest"))(on_chat)
    app = service_app(name="readytest", settings=settings, broker=broker, topics=[topic])
    watch_engines(app, {"Redis": lambda: ping(redis.url)})
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as http:
            assert (await http.get("/ready")).status_code == 503  # not started
            async with app.router.lifespan_context(app):
                body = await _ready(http, 200)
                assert body["engines"] == {"Redis": "ok"}
                assert body["unassigned"] == []

                await redis.stop()
                body = await _ready(http, 503)
                assert str(body["engines"]["Redis"]).startswith("down")  # type: ignore[index]

                await redis.start()
                await _ready(http, 200)

                assert (await http.get("/metrics")).status_code == 401
                scraped = await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
                assert scraped.status_code == 200
                lag = f'weir_consumer_lag{{group="weir.readytest",partition="0",topic="{topic}"}}'
                assert lag in scraped.text
                assert 'weir_http_requests_total{method="GET",route="/ready",status="503"}' in (
                    scraped.text
                )
            assert (await http.get("/ready")).status_code == 503  # stopped
    finally:
        await redis.stop()
