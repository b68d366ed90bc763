"""Quotas in a real Redis: a burst of users larger than the connection pool waits for a
connection instead of failing (200 sockets sending at once once got 'Too many connections')."""

from __future__ import annotations

import asyncio

import pytest

from weir_gateway.quotas import Quotas
from weir_gateway.settings import GatewaySettings

pytestmark = pytest.mark.integration


async def test_a_burst_larger_than_the_pool_is_served(stack_env: dict[str, str]) -> None:
    settings = GatewaySettings(
        redis_url=stack_env["REDIS_URL"], quota_redis_connections=4, topic_prefix="quota-burst."
    )
    quotas = Quotas(settings)
    await asyncio.gather(*(quotas.spend("chat", f"user-{i}") for i in range(300)))
    # each user spent one of their own window: the quota still counts, per user
    await asyncio.gather(*(quotas.spend("chat", "user-0") for _ in range(3)))
