"""The ShortTermStore conformance suite, run against every adapter, plus adapter specifics."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from uuid import uuid4

import pytest

from weir_common.engines import redact, redis_client
from weir_common.events import Turn
from weir_memory.repository import (
    InMemoryShortTermStore,
    RedisShortTermStore,
    StoreError,
)

if TYPE_CHECKING:
    from .conftest import Clock, StoreFactory


def turn(n: int, run_id: str | None = None) -> Turn:
    return Turn(run_id=run_id or f"run-{n}", user=f"question {n} 你好", assistant=f"answer {n}")


def conv() -> str:
    return f"conv-{uuid4().hex}"


# --- conformance: every adapter -----------------------------------------------------------


async def test_turns_read_back_oldest_first(make_store: StoreFactory) -> None:
    store, c = make_store(), conv()
    for n in range(3):
        assert await store.append(c, turn(n))
    assert await store.recent(c) == [turn(0), turn(1), turn(2)]
    assert await store.turn_count(c) == 3


async def test_unknown_conversation_is_empty(make_store: StoreFactory) -> None:
    store = make_store()
    assert await store.recent(conv()) == []
    assert await store.turn_count(conv()) == 0


async def test_window_keeps_the_last_turns(make_store: StoreFactory) -> None:
    store, c = make_store(window=3), conv()
    for n in range(5):
        await store.append(c, turn(n))
    assert await store.recent(c) == [turn(2), turn(3), turn(4)]
    assert await store.turn_count(c) == 5


async def test_same_run_is_stored_once(make_store: StoreFactory) -> None:
    store, c = make_store(), conv()
    assert await store.append(c, turn(0))
    assert not await store.append(c, turn(0))
    assert not await store.append(c, Turn(run_id="run-0", user="changed", assistant="changed"))
    assert await store.recent(c) == [turn(0)]
    assert await store.turn_count(c) == 1


async def test_run_trimmed_from_the_window_is_still_not_stored_again(
    make_store: StoreFactory,
) -> None:
    store, c = make_store(window=2), conv()
    for n in range(3):
        await store.append(c, turn(n))
    assert not await store.append(c, turn(0))
    assert await store.recent(c) == [turn(1), turn(2)]


async def test_concurrent_redeliveries_store_once(make_store: StoreFactory) -> None:
    store, c = make_store(), conv()
    added = await asyncio.gather(*(store.append(c, turn(7)) for _ in range(10)))
    assert sorted(added) == [False] * 9 + [True]
    assert await store.recent(c) == [turn(7)]


async def test_conversations_are_isolated(make_store: StoreFactory) -> None:
    store, a, b = make_store(), conv(), conv()
    await store.append(a, turn(1))
    await store.append(b, turn(1))  # same run id, other conversation: stored there too
    await store.append(b, turn(2))
    assert await store.recent(a) == [turn(1)]
    assert await store.recent(b) == [turn(1), turn(2)]


async def test_compress_drops_the_oldest_and_keeps_their_summary(make_store: StoreFactory) -> None:
    store, c = make_store(window=12), conv()
    for n in range(11):
        await store.append(c, turn(n))
    assert await store.summary(c) is None
    await store.compress(c, 2, "turns 0 and 1")
    assert await store.recent(c) == [turn(n) for n in range(2, 11)]
    assert await store.summary(c) == "turns 0 and 1"
    assert await store.turn_count(c) == 11


async def test_notes_stay_with_their_conversation(make_store: StoreFactory) -> None:
    store, c = make_store(), conv()
    await store.append(c, turn(0))
    assert await store.note(c, "focus") is None
    await store.set_note(c, "focus", "session-7")
    assert await store.note(c, "focus") == "session-7"
    assert await store.note(conv(), "focus") is None


async def test_forget_user_removes_only_that_users_conversations(make_store: StoreFactory) -> None:
    store = make_store()
    mine, theirs = conv(), conv()
    user = f"user-{uuid4().hex}"
    await store.append(mine, turn(0), user)
    await store.append(theirs, turn(1), f"other-{uuid4().hex}")
    assert await store.forget_user(user) == 1
    assert await store.recent(mine) == []
    assert await store.recent(theirs) == [turn(1)]


# --- TTL, per adapter ---------------------------------------------------------------------


@pytest.mark.unit
async def test_in_memory_conversation_expires_after_ttl(clock: Clock) -> None:
    store, c = InMemoryShortTermStore(window=5, ttl_s=60, clock=clock), conv()
    await store.append(c, turn(0))
    clock.advance(59)
    assert await store.recent(c) == [turn(0)]
    clock.advance(1)
    assert await store.recent(c) == []
    assert await store.turn_count(c) == 0
    assert await store.append(c, turn(0)), "the run ids expire with the conversation"


@pytest.mark.unit
async def test_in_memory_write_refreshes_ttl(clock: Clock) -> None:
    store, c, other = InMemoryShortTermStore(window=5, ttl_s=60, clock=clock), conv(), conv()
    await store.append(c, turn(0))
    await store.append(other, turn(0))
    clock.advance(50)
    await store.append(c, turn(1))
    clock.advance(50)
    assert await store.recent(c) == [turn(0), turn(1)]
    assert await store.recent(other) == []


@pytest.mark.integration
async def test_redis_sets_ttl_on_both_keys_on_every_write(redis_url: str) -> None:
    client = redis_client(redis_url)
    store = RedisShortTermStore(client, window=5, ttl_s=120, prefix=f"test:{uuid4().hex}:")
    c = conv()
    try:
        await store.append(c, turn(0))
        keys = store.keys(c)
        for key in keys:
            assert 110 <= await client.ttl(key) <= 120
            await client.expire(key, 10)
        await store.append(c, turn(1))
        for key in keys:
            assert await client.ttl(key) > 10, "a write refreshes the TTL"
    finally:
        await client.aclose()


@pytest.mark.integration
async def test_redis_meta_hash_holds_count_summary_and_last_update(redis_url: str) -> None:
    client = redis_client(redis_url)
    now = [1_767_225_600.0]
    store = RedisShortTermStore(client, window=5, ttl_s=120, prefix=f"test:{uuid4().hex}:",
                                clock=lambda: now[0])  # fmt: skip
    c = conv()
    _, meta_key = store.keys(c)

    async def meta() -> dict[str, str]:
        raw = await client.hgetall(meta_key)
        return {_text(k): _text(v) for k, v in raw.items()}

    try:
        await store.append(c, turn(0))
        assert float((await meta())["updated_at"]) == 1_767_225_600.0
        now[0] += 30.5
        assert not await store.append(c, turn(0)), "a redelivery is no update"
        assert float((await meta())["updated_at"]) == 1_767_225_600.0
        await store.append(c, turn(1))
        assert float((await meta())["updated_at"]) == 1_767_225_630.5
        now[0] += 60
        await store.compress(c, 1, "turn 0")
        fields = await meta()
        assert (fields["count"], fields["summary"]) == ("2", "turn 0")
        assert float(fields["updated_at"]) == 1_767_225_690.5
    finally:
        await client.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.integration
async def test_redis_conversation_really_expires(redis_url: str) -> None:
    client = redis_client(redis_url)
    store = RedisShortTermStore(client, window=5, ttl_s=1, prefix=f"test:{uuid4().hex}:")
    c = conv()
    try:
        await store.append(c, turn(0))
        await asyncio.sleep(1.2)
        assert await store.recent(c) == []
        assert await store.append(c, turn(0))
    finally:
        await client.aclose()


@pytest.mark.integration
async def test_redis_unreachable_raises_store_error() -> None:
    client = redis_client("redis://127.0.0.1:1/0")
    store = RedisShortTermStore(client, window=5, ttl_s=60)
    try:
        with pytest.raises(StoreError, match="redis"):
            await store.recent(conv())
    finally:
        await client.aclose()


@pytest.mark.unit
def test_redact_hides_the_password() -> None:
    assert redact("redis://user:secret@host:6379/0") == "redis://user:***@host:6379/0"
    assert redact("redis://127.0.0.1:16379/0") == "redis://127.0.0.1:16379/0"
