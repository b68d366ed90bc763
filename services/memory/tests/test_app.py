"""Wiring: the store the settings choose, and the app built around it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from weir_common.service_auth import service_headers
from weir_memory.app import create_app
from weir_memory.repository import InMemoryShortTermStore, RedisShortTermStore
from weir_memory.settings import MemorySettings
from weir_memory.wiring import make_store


@pytest.mark.unit
def test_memory_backend_needs_no_hooks() -> None:
    wiring = make_store(MemorySettings(stm_backend="memory"))
    assert isinstance(wiring.store, InMemoryShortTermStore)
    assert (wiring.on_startup, wiring.on_shutdown) == ([], [])


@pytest.mark.integration
async def test_redis_backend_opens_and_closes_redis(redis_url: str) -> None:
    wiring = make_store(MemorySettings(stm_backend="redis", redis_url=redis_url))
    assert isinstance(wiring.store, RedisShortTermStore)
    for hook in wiring.on_startup:
        await hook()
    assert await wiring.store.turn_count("nobody") == 0
    for hook in wiring.on_shutdown:
        await hook()


@pytest.mark.unit
def test_create_app_serves_health_routes() -> None:
    app = create_app(MemorySettings(stm_backend="memory"))
    paths = {getattr(route, "path", None) for route in app.routes}
    assert {"/health", "/ready"} <= paths


@pytest.mark.unit
def test_conversation_routes_need_the_service_credential_and_long_term_memory() -> None:
    token = SecretStr("s3")
    settings = MemorySettings(stm_backend="memory", long_term=False, weir_service_token=token)
    client = TestClient(create_app(settings))  # no lifespan: nothing is started
    assert client.get("/conversations/ada").status_code == 401
    answer = client.get("/conversations/ada", headers=service_headers(settings.weir_service_token))
    assert answer.status_code == 503, "conversations live in long-term memory's PostgreSQL"
