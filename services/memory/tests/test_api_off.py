"""The memory API with long-term memory off: "forget me" still clears the conversations."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI

from weir_common.events import Turn
from weir_memory.api import make_router
from weir_memory.repository import InMemoryShortTermStore

pytestmark = pytest.mark.unit


async def test_with_long_term_memory_off_forget_clears_the_conversations() -> None:
    stm = InMemoryShortTermStore(window=12, ttl_s=60)
    await stm.append("c1", Turn(run_id="r1", user="my secret", assistant="ok"), "dora")
    app = FastAPI()
    app.include_router(make_router(lambda: None, _now, lambda: stm))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memory") as client:
        off = await client.get("/memory/items/dora")
        forgot = await client.delete("/memory/users/dora")
    assert off.status_code == 503
    assert forgot.status_code == 200, forgot.text
    assert forgot.json()["deleted"] == {"conversations": 1}
    assert forgot.json()["long_term"] == "off"
    assert await stm.recent("c1") == []


def _now() -> datetime:
    return datetime.now(UTC)
