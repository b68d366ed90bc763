"""Fixtures of the harness tests: a private PostgreSQL and a fresh database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest

from weir_deploy.base import EngineStartError
from weir_deploy.pytest_plugin import StackRunner
from weir_deploy.stack import Stack
from weir_harness.repository import RunRepository
from weir_harness.settings import HarnessSettings


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """Admin URL of a session-wide private PostgreSQL; fails (never skips) if it cannot start."""
    runner = StackRunner(Stack(("postgres",), ephemeral=True))
    try:
        env = runner.start()
    except EngineStartError as exc:
        runner.stop()
        pytest.fail(str(exc), pytrace=False)
    except Exception as exc:
        runner.stop()
        pytest.fail(f"postgres failed to start: {type(exc).__name__}: {exc}", pytrace=False)
    try:
        yield env["DATABASE_URL"]
    finally:
        runner.stop()


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    name = f"harness_{uuid4().hex[:16]}"
    admin = await asyncpg.connect(postgres_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield _with_database(postgres_url, name)
    finally:
        admin = await asyncpg.connect(postgres_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture
def settings(database_url: str) -> HarnessSettings:
    """Explicit retry, deadline and budget policy; no knowledge base, no tool catalogue."""
    return HarnessSettings(
        database_url=database_url,
        max_attempts=3,
        backoff_base_s=0.5,
        step_timeout_s=15.0,
        generate_timeout_s=120.0,
        rag_connected=False,
        rag_top_k=5,
        agent_max_model_turns=6,
        agent_max_tool_calls=8,
        agent_max_repeated_tool_calls=1,
        agent_max_runtime_seconds=60.0,
        tool_timeout_s=30.0,
    )


@pytest.fixture
async def repo(database_url: str) -> AsyncIterator[RunRepository]:
    """An opened repository over the test's own database (schema created)."""
    repository = RunRepository(database_url)
    await repository.open()
    try:
        yield repository
    finally:
        await repository.close()
