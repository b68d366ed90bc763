"""Fixtures the end-to-end and browser tiers share, so both run against one product per
pytest session: the whole product as separate processes over the real broker."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from weir_common.events import new_id
from weir_common.testing.otlp_collector import OTLPCollector
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services


@pytest.fixture(scope="session")
def collector() -> Iterator[OTLPCollector]:
    """An OTLP receiver every service exports its spans to."""
    with OTLPCollector() as received:
        yield received


@pytest.fixture(scope="session")
async def llm() -> AsyncIterator[ScriptedLLM]:
    """The scripted model the router reaches through litellm."""
    async with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="session")
def topic_prefix() -> str:
    """Topics of this session only, so other tiers on the same broker do not interfere."""
    return f"e2e{new_id()[:8]}."


@pytest.fixture(scope="session")
async def product(
    stack_env: dict[str, str], llm: ScriptedLLM, collector: OTLPCollector, topic_prefix: str
) -> AsyncIterator[Services]:
    """Gateway, harness, router and memory, each its own process."""
    logs = Path(tempfile.mkdtemp(prefix="weir-e2e-logs-"))
    services = Services(
        stack_env,
        logs,
        gateway_port=free_port(),
        extra_env={
            **LOOPBACK_PROXY_AUTH,
            "TOPIC_PREFIX": topic_prefix,
            "LLM_MODEL": "openai/scripted",
            "LLM_API_BASE": llm.base_url,
            "LLM_API_KEY": "sk-scripted",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "BACKOFF_BASE_S": "0.2",
            # a tool that needs the user's approval before each call (tests/e2e/test_confirm.py)
            "TOOLS_CONFIRM": '["convert_time"]',
        },
    )
    async with services:
        yield services
