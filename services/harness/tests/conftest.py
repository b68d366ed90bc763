"""Fixtures of the harness tests: a private PostgreSQL and a fresh database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from weir_deploy.pytest_plugin import fresh_database
from weir_harness.repository import RunRepository
from weir_harness.settings import HarnessSettings


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    async with fresh_database(postgres_url, "harness") as url:
        yield url


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


async def _opened(database_url: str) -> AsyncIterator[RunRepository]:
    repository = RunRepository(database_url)
    await repository.open()
    try:
        yield repository
    finally:
        await repository.close()


@pytest.fixture
async def repo(database_url: str) -> AsyncIterator[RunRepository]:
    """An opened repository over the test's own database (schema created)."""
    async for repository in _opened(database_url):
        yield repository


@pytest.fixture
async def second_repo(database_url: str) -> AsyncIterator[RunRepository]:
    """Another repository over the same database: the harness after a restart."""
    async for repository in _opened(database_url):
        yield repository
