"""Stored results: the same behaviour from the in-process LRU and from Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from weir_common.engines import redact, redis_client
from weir_tools.models import ToolOutcome
from weir_tools.repository import (
    MemoryResultStore,
    RedisResultStore,
    ResultStore,
    StoreError,
)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("redis", marks=pytest.mark.integration),
    ]
)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ResultStore]:
    """One store of each adapter; the Redis one on the session stack's server."""
    if request.param == "memory":
        yield MemoryResultStore(ttl_s=60)
        return
    env: dict[str, str] = request.getfixturevalue("stack_env")
    space = f"test:{uuid4().hex}:"
    redis_store = RedisResultStore(
        redis_client(env["REDIS_URL"]), ttl_s=60, prefix=space, marker_prefix=space + "started:",
        user_prefix=space + "user:",
    )  # fmt: skip
    yield redis_store
    await redis_store.close()


async def test_stored_result_comes_back(store: ResultStore) -> None:
    outcome = ToolOutcome(content="Echo: 你好", duration_ms=1.5)
    assert await store.get("k") is None
    await store.put("k", outcome)
    assert await store.get("k") == outcome


async def test_first_result_wins(store: ResultStore) -> None:
    await store.put("k", ToolOutcome(content="first"))
    await store.put("k", ToolOutcome(content="second"))
    stored = await store.get("k")
    assert stored is not None
    assert stored.content == "first"


async def test_a_key_is_claimed_once_until_released(store: ResultStore) -> None:
    assert await store.claim("k")
    assert not await store.claim("k"), "a second process finds the call started"
    await store.release("k")
    assert await store.claim("k")


@pytest.mark.unit
async def test_memory_results_expire_and_are_bounded() -> None:
    clock = Clock()
    store = MemoryResultStore(ttl_s=10, max_keys=2, clock=clock)
    for key in ("a", "b", "c"):
        await store.put(key, ToolOutcome(content=key))
    assert await store.get("a") is None  # evicted: least recently used
    clock.now += 10
    assert await store.get("b") is None  # expired


@pytest.mark.integration
async def test_redis_results_expire(stack_env: dict[str, str]) -> None:
    client = redis_client(stack_env["REDIS_URL"])
    store = RedisResultStore(client, ttl_s=60, prefix=f"test:{uuid4().hex}:")
    await store.put("k", ToolOutcome(content="x"))
    assert 0 < await client.ttl(f"{store._prefix}k") <= 60
    await store.close()


@pytest.mark.integration
async def test_unreachable_redis_raises_store_error() -> None:
    store = RedisResultStore(redis_client("redis://127.0.0.1:1/0"), ttl_s=60)
    with pytest.raises(StoreError, match=r"^redis: ConnectionError"):
        await store.get("k")
    await store.close()


@pytest.mark.unit
def test_redact_hides_the_password() -> None:
    assert redact("redis://:pw@host:6379/0") == "redis://:***@host:6379/0"
    assert redact("redis://host:6379/0") == "redis://host:6379/0"


async def test_forgetting_a_user_drops_their_results_and_markers_only(store: ResultStore) -> None:
    await store.put("mine", ToolOutcome(content="Zoe's weather"), "zoe")
    assert await store.claim("mine-running", "zoe")
    await store.put("theirs", ToolOutcome(content="Bob's weather"), "bob")
    await store.put("nobody", ToolOutcome(content="a shared lookup"))
    assert await store.forget_user("zoe") == 2
    assert await store.get("mine") is None
    assert await store.claim("mine-running"), "the marker went too"
    assert await store.get("theirs") is not None
    assert await store.get("nobody") is not None
    assert await store.forget_user("zoe") == 0
