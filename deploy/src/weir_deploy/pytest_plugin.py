"""pytest plugin: a session-wide `Stack` of real engines, exposed as the ``stack_env`` fixture.

Register with ``pytest_plugins = ["weir_deploy.pytest_plugin"]`` in the root conftest (or
``-p weir_deploy.pytest_plugin``). The stack runs on its own event loop in a background
thread, so the fixture is synchronous and independent of the tests' event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest

from .base import EngineStartError, free_port
from .milvus import MilvusEngine
from .stack import ALL_ENGINES, Stack

T = TypeVar("T")
START_TIMEOUT = float(os.environ.get("WEIR_STACK_START_TIMEOUT", "600"))


class StackRunner:
    """Runs a `Stack` on a private event loop in a daemon thread."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="weir-stack", daemon=True
        )
        self._thread.start()
        self._stopped = False

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> dict[str, str]:
        """Start the stack and return its env, with the services' credential (raises
        `EngineStartError`)."""
        atexit.register(self.stop)
        self._call(self.stack.start(), START_TIMEOUT)
        return self.stack.services_env()

    def stop(self) -> None:
        """Stop the stack and the loop thread (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._call(self.stack.stop(), 120)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self._loop.close()
            atexit.unregister(self.stop)


def _run_stack(stack: Stack) -> Iterator[dict[str, str]]:
    """Start ``stack`` for a session fixture; fail (never skip) when an engine cannot start."""
    runner = StackRunner(stack)
    try:
        env = runner.start()
    except EngineStartError as exc:
        runner.stop()
        pytest.fail(str(exc), pytrace=False)
    except Exception as exc:
        runner.stop()
        pytest.fail(f"stack failed to start: {type(exc).__name__}: {exc}", pytrace=False)
    try:
        yield env
    finally:
        runner.stop()


@pytest.fixture(scope="session")
def stack_env() -> Iterator[dict[str, str]]:
    """Env of a session-wide ephemeral stack with all engines (Kafka from ``KAFKA_IMPL``;
    Elasticsearch too when ``LEXICAL_BACKEND=elasticsearch``, so the services use it).

    Fails the requesting tests (never skips) when an engine cannot start.
    """
    impl = os.environ.get("KAFKA_IMPL", "apache")
    engines = ALL_ENGINES
    if os.environ.get("LEXICAL_BACKEND") == "elasticsearch":
        engines = (*ALL_ENGINES, "elasticsearch")
    yield from _run_stack(Stack(engines, ephemeral=True, kafka_impl=impl))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """Admin URL of a session-wide private PostgreSQL (only that engine)."""
    for env in _run_stack(Stack(("postgres",), ephemeral=True)):
        yield env["DATABASE_URL"]


@asynccontextmanager
async def fresh_database(admin_url: str, prefix: str = "test") -> AsyncIterator[str]:
    """A new, empty database on the server at `admin_url`; dropped (forcibly) on exit."""
    name = f"{prefix}_{uuid4().hex[:16]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    finally:
        admin = await asyncpg.connect(admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture(scope="session")
def milvus_env() -> Iterator[dict[str, str]]:
    """Only Milvus (Milvus Lite server, or ``MILVUS_URI``), for the whole session."""
    yield from _run_stack(Stack(["milvus"], ephemeral=True))


@pytest.fixture
async def private_milvus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MilvusEngine]:
    """A Milvus Lite server of the test's own, on its own data dir: the test may stop and
    start it (`stop()`, `start()`, same port and data) without disturbing anyone else."""
    monkeypatch.delenv("MILVUS_URI", raising=False)
    engine = MilvusEngine(tmp_path, free_port())
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


@pytest.fixture(scope="session")
def elasticsearch_env() -> Iterator[dict[str, str]]:
    """Only Elasticsearch (a private node, or ``ES_URL``), for the whole session."""
    yield from _run_stack(Stack(["elasticsearch"], ephemeral=True))
