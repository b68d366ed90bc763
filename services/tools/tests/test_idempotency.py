"""At most once per idempotency key across processes: two services share one real Redis, and
an in-progress marker left by a crashed call is not blindly called again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from uuid import uuid4

import pytest

from weir_common.engines import redis_client
from weir_tools.builtins import TIME
from weir_tools.mcp_manager import McpManager
from weir_tools.repository import RedisResultStore
from weir_tools.service import ToolService
from weir_tools.settings import ServerConfig

from .conftest import StdioPeer

pytestmark = pytest.mark.integration

TOGGLE = "toggle-simulated-logging"
MakeService = Callable[[ServerConfig], Awaitable[tuple[ToolService, RedisResultStore]]]


@pytest.fixture
async def make_service(stack_env: dict[str, str]) -> AsyncIterator[MakeService]:
    """Services (one per simulated process) over the session's Redis, one key space per test."""
    prefix = f"test:{uuid4().hex[:8]}:"
    made: list[ToolService] = []

    async def make(config: ServerConfig) -> tuple[ToolService, RedisResultStore]:
        store = RedisResultStore(
            redis_client(stack_env["REDIS_URL"]), ttl_s=600,
            prefix=prefix + "result:", marker_prefix=prefix + "started:",
        )  # fmt: skip
        mcp = McpManager([config], reserved=[TIME.info.name], backoff_s=0)
        service = ToolService([TIME], mcp, store)
        made.append(service)
        await service.start()
        return service, store

    yield make
    for service in made:
        await service.close()


async def test_a_result_is_replayed_by_another_process(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    first, _ = await make_service(everything_stdio("everything").config)
    second, _ = await make_service(everything_stdio("everything").config)
    done = await first.call(TOGGLE, {}, timeout_s=10, idempotency_key="k1")
    again = await second.call(TOGGLE, {}, timeout_s=10, idempotency_key="k1")
    assert done.content.startswith("Started simulated")
    assert (again.content, again.replayed) == (done.content, True)
    # the second process's server never ran the toggle: a fresh call there starts logging
    assert (await second.call(TOGGLE, {}, timeout_s=10)).content.startswith("Started")


async def test_an_unknown_outcome_is_not_repeated_for_an_unsafe_tool(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service, store = await make_service(everything_stdio("everything").config)
    assert await store.claim("k2"), "a crashed process left its marker"
    outcome = await service.call(TOGGLE, {}, timeout_s=10, idempotency_key="k2")
    assert outcome.is_error
    assert "outcome is unknown" in outcome.content
    assert (await service.call(TOGGLE, {}, timeout_s=10)).content.startswith("Started"), (
        "the toggle was not called"
    )


async def test_an_unknown_outcome_is_repeated_for_tools_safe_to_repeat(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service, store = await make_service(everything_stdio("everything").config)
    assert await store.claim("k3")
    echo = await service.call("echo", {"message": "hi"}, timeout_s=10, idempotency_key="k3")
    assert (echo.content, echo.is_error) == ("Echo: hi", False)
    assert await store.claim("k4")
    now = await service.call("time", {}, timeout_s=10, idempotency_key="k4")
    assert not now.is_error
    assert (await service.call("time", {}, timeout_s=10, idempotency_key="k4")).replayed


async def test_a_failure_around_the_tool_releases_the_key(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service, store = await make_service(everything_stdio("everything").config)
    missing = await service.call("no-such-tool", {}, timeout_s=10, idempotency_key="k5")
    assert missing.is_error
    assert await store.claim("k5"), "nothing ran, so the key is free again"
