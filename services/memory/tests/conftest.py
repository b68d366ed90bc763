"""Fixtures shared by the memory tests: a real redis-server, stores of each adapter, and
long-term memory on the session's real engines (PostgreSQL, Milvus) with a hand-moved clock."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest
import redis

from weir_common.engines import redis_client
from weir_deploy.base import free_port
from weir_deploy.pytest_plugin import fresh_database
from weir_memory.flash import Flash
from weir_memory.longterm.service import LongTermMemory
from weir_memory.repository import (
    InMemoryShortTermStore,
    RedisShortTermStore,
    ShortTermStore,
)
from weir_memory.settings import MemorySettings
from weir_memory.wiring import LongTermWiring

START_TIMEOUT_S = 10.0


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _wait_for_ping(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"redis-server exited with {proc.returncode}: {log.read_text()}")
            try:
                client.ping()
            except redis.ConnectionError:
                time.sleep(0.05)
            else:
                return
    finally:
        client.close()
    pytest.fail(f"redis-server did not answer PING within {START_TIMEOUT_S}s: {log.read_text()}")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server on a free loopback port; fails (never skips) if it cannot start."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server not found: apt-get install -y redis-server")
    work = tmp_path_factory.mktemp("redis")
    port = free_port()
    argv = [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
            "--appendonly", "no", "--dir", str(work), "--protected-mode", "no"]  # fmt: skip
    log = work / "redis.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for_ping(proc, url, log)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def clock() -> Clock:
    """A clock at a fixed time, moved only by the test."""
    return Clock()


StoreFactory = Callable[..., ShortTermStore]


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("redis", marks=pytest.mark.integration),
    ]
)
async def make_store(request: pytest.FixtureRequest, clock: Clock) -> AsyncIterator[StoreFactory]:
    """Builds stores of one adapter; every conformance test runs once per adapter."""
    if request.param == "memory":

        def memory(*, window: int = 10, ttl_s: int = 3600) -> ShortTermStore:
            return InMemoryShortTermStore(window=window, ttl_s=ttl_s, clock=clock)

        yield memory
        return
    url: str = request.getfixturevalue("redis_url")
    client = redis_client(url)
    prefix = f"test:{uuid4().hex}:"  # keeps tests apart on the shared server

    def on_redis(*, window: int = 10, ttl_s: int = 3600) -> ShortTermStore:
        return RedisShortTermStore(client, window=window, ttl_s=ttl_s, prefix=prefix)

    yield on_redis
    await client.aclose()


class WallClock:
    """A wall clock (UTC datetimes) the test moves by hand: consolidation never sleeps."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def wall() -> WallClock:
    """2026-01-01 12:00 UTC until the test moves it."""
    return WallClock()


@pytest.fixture
def memory_settings(stack_env: dict[str, str], tmp_path: Path) -> MemorySettings:
    """Settings against the session's real PostgreSQL, Milvus and Redis (the turn log's BM25
    index in the test's own folder); no model."""
    return MemorySettings(
        data_dir=tmp_path,
        database_url=stack_env["DATABASE_URL"],
        milvus_uri=stack_env["MILVUS_URI"],
        redis_url=stack_env["REDIS_URL"],
        memory_llm=False,
        vector_collection=f"test_{uuid4().hex[:8]}",
    )


@pytest.fixture
async def fresh_settings(memory_settings: MemorySettings) -> AsyncIterator[MemorySettings]:
    """`memory_settings` on a new, empty database: for tests that change the embedder, whose
    re-embedding must not touch the shared database's rows."""
    async with fresh_database(memory_settings.database_url, "memory") as url:
        yield memory_settings.model_copy(update={"database_url": url})


@pytest.fixture
async def long_term(
    memory_settings: MemorySettings, wall: WallClock
) -> AsyncIterator[LongTermMemory]:
    """Long-term memory on real engines (a fresh Milvus collection per test)."""
    wiring = LongTermWiring(memory_settings, Flash(None), wall)
    memory = await wiring.open()
    yield memory
    await wiring.close()


@pytest.fixture
def user() -> str:
    """A user nobody else uses."""
    return f"user-{uuid4().hex[:10]}"
