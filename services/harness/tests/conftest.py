"""Fixtures of the harness tests: the run store (in memory, or a fresh PostgreSQL database per
test) and explicit settings.

A test that asks for `repo` (or `service`, `settings`) runs against the stores its module
lists in `STORES` (default: PostgreSQL only), or those of its `@pytest.mark.stores(...)`: the
in-memory case is a unit test, the PostgreSQL case an integration test. A test that asks for
`database_url` itself talks to PostgreSQL and runs on PostgreSQL only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from weir_deploy.pytest_plugin import fresh_database
from weir_harness.repository import MemoryRunStore, RunRepository, RunStore
from weir_harness.repository.memory_tables import MemoryDatabase
from weir_harness.settings import HarnessSettings

MEMORY, POSTGRES = "memory", "postgres"
_TIER = {MEMORY: pytest.mark.unit, POSTGRES: pytest.mark.integration}
_UNUSED_URL = "postgresql://unused"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "stores(*kinds): the run stores a harness test runs on (memory, postgres)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `store_kind`, each kind with the mark of its tier."""
    if "store_kind" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("stores")
    kinds: tuple[str, ...] = (
        marker.args if marker else getattr(metafunc.module, "STORES", (POSTGRES,))
    )
    if "database_url" in metafunc.fixturenames:
        kinds = (POSTGRES,)
    metafunc.parametrize(
        "store_kind", [pytest.param(kind, marks=_TIER[kind], id=kind) for kind in kinds]
    )


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    async with fresh_database(postgres_url, "harness") as url:
        yield url


@pytest.fixture
def store_url(store_kind: str, request: pytest.FixtureRequest) -> str:
    """The test's PostgreSQL database, or a URL nothing uses (the in-memory store)."""
    if store_kind == POSTGRES:
        return str(request.getfixturevalue("database_url"))
    return _UNUSED_URL


@pytest.fixture
def settings(store_url: str) -> HarnessSettings:
    """Explicit retry, deadline and budget policy; no knowledge base, no tool catalogue.

    One command at a time (`route_with_memory=False`), so each test walks the steps in their
    order; `test_route_with_memory.py` covers the route asked together with memory. No model
    judge (`evaluator_judge=False`): a model's answer completes the run, as these tests walk
    it; `test_judge_step.py` covers the judge's step."""
    return HarnessSettings(
        database_url=store_url,
        route_with_memory=False,
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
        evaluator_judge=False,
        tool_timeout_s=30.0,
    )


@pytest.fixture
def memory_database() -> MemoryDatabase:
    """The in-memory store's "database", shared by `repo` and `second_repo`."""
    return MemoryDatabase()


async def _opened(
    store_kind: str, store_url: str, database: MemoryDatabase
) -> AsyncIterator[RunStore]:
    repository: RunStore = (
        RunRepository(store_url) if store_kind == POSTGRES else MemoryRunStore(database)
    )
    await repository.open()
    try:
        yield repository
    finally:
        await repository.close()


@pytest.fixture
async def repo(
    store_kind: str, store_url: str, memory_database: MemoryDatabase
) -> AsyncIterator[RunStore]:
    """An opened run store over the test's own database (schema created)."""
    async for repository in _opened(store_kind, store_url, memory_database):
        yield repository


@pytest.fixture
async def second_repo(
    store_kind: str, store_url: str, memory_database: MemoryDatabase
) -> AsyncIterator[RunStore]:
    """Another store over the same database: the harness after a restart."""
    async for repository in _opened(store_kind, store_url, memory_database):
        yield repository
