"""The whole service on a real broker: a call over Kafka, the catalogue, the HTTP routes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from faststream.kafka import KafkaBroker
from opentelemetry.sdk.trace import TracerProvider
from pydantic import SecretStr

from weir_common.bus import make_broker, publish, subscriber_options
from weir_common.events import (
    ToolCallItem,
    ToolsCallCompleted,
    ToolsCallRequested,
    ToolsCatalogUpdated,
    new_id,
)
from weir_common.service_auth import service_headers
from weir_tools.app import create_app, make_store
from weir_tools.repository import MemoryResultStore, RedisResultStore
from weir_tools.settings import ToolsSettings

from .conftest import StdioPeer, time_server


@pytest.mark.unit
def test_store_follows_redis_url() -> None:
    memory, hooks = make_store(ToolsSettings(redis_url=None))
    assert isinstance(memory, MemoryResultStore)
    assert hooks == []
    redis, hooks = make_store(ToolsSettings(redis_url="redis://127.0.0.1:1/0"))
    assert isinstance(redis, RedisResultStore)
    assert len(hooks) == 1


@pytest.mark.unit
def test_app_serves_health_and_internal_routes() -> None:
    app = create_app(ToolsSettings(mcp_servers=[]))
    paths = set(app.openapi()["paths"])  # included routers' routes too
    assert {"/health", "/ready", "/internal/catalog", "/internal/call"} <= paths


def _client(bootstrap: str, prefix: str) -> tuple[KafkaBroker, asyncio.Queue[object]]:
    """A broker that records completed calls and catalogues published under `prefix`."""
    broker = make_broker(bootstrap, "tools-test", TracerProvider())
    seen: asyncio.Queue[object] = asyncio.Queue()

    async def completed(event: ToolsCallCompleted) -> None:
        await seen.put(event)

    async def catalog(event: ToolsCatalogUpdated) -> None:
        await seen.put(event)

    options = subscriber_options(f"{prefix}test", fetch_max_wait_ms=50)
    broker.subscriber(f"{prefix}tools.call.completed", **options)(completed)
    options = subscriber_options(f"{prefix}test.catalog", fetch_max_wait_ms=50)
    broker.subscriber(f"{prefix}tools.catalog.updated", **options)(catalog)
    return broker, seen


async def _next(seen: asyncio.Queue[object], kind: type[object]) -> object:
    async with asyncio.timeout(60):
        while not isinstance(item := await seen.get(), kind):
            pass
    return item


@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.timeout(300)
async def test_call_over_kafka_and_http(
    stack_env: dict[str, str], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    prefix = f"tools{new_id()[:8]}."
    settings = ToolsSettings(
        kafka_bootstrap_servers=stack_env["KAFKA_BOOTSTRAP_SERVERS"],
        topic_prefix=prefix,
        kafka_fetch_max_wait_ms=50,
        redis_url=stack_env["REDIS_URL"],
        mcp_servers=[time_server(), everything_stdio("everything").config],
        weir_service_token=SecretStr("tools-test-credential"),
    )
    app = create_app(settings)
    client, seen = _client(settings.kafka_bootstrap_servers, prefix)
    async with app.router.lifespan_context(app), client:
        await client.start()
        catalog = await _next(seen, ToolsCatalogUpdated)
        assert isinstance(catalog, ToolsCatalogUpdated)
        assert {"time", "get_current_time", "echo"} <= {t.name for t in catalog.tools}
        item = ToolCallItem(tool="get_current_time", arguments={"timezone": "Asia/Tokyo"},
                            idempotency_key=new_id())  # fmt: skip
        cmd = ToolsCallRequested(run_id="r1", calls=[item], timeout_s=10)
        await publish(client, settings.topics, cmd)
        done = await _next(seen, ToolsCallCompleted)
        assert isinstance(done, ToolsCallCompleted)
        [result] = done.results
        assert (done.request_id, done.run_id, result.is_error) == (cmd.event_id, "r1", False)
        assert '"timezone": "Asia/Tokyo"' in result.content

        transport = httpx.ASGITransport(app=app)
        headers = service_headers(settings.weir_service_token)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://tools", headers=headers
        ) as http:
            listed = (await http.get("/internal/catalog")).json()
            assert "get-sum" in {t["name"] for t in listed["tools"]}
            assert {s["name"]: s["connected"] for s in listed["servers"]}["everything"]
            body = {"tool": "get-sum", "arguments": {"a": 1, "b": 2}, "idempotency_key": "h1"}
            first = (await http.post("/internal/call", json=body)).json()
            again = (await http.post("/internal/call", json=body)).json()
    assert first["content"] == "The sum of 1 and 2 is 3."
    assert (first["replayed"], again["replayed"]) == (False, True)
