"""Fixtures the end-to-end and browser tiers share, so both run against one product per
pytest session: the whole product as separate processes over the real broker."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from weir_common.events import new_id
from weir_common.testing.otlp_collector import OTLPCollector
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services

FILESYSTEM_SERVER = (
    Path(__file__).resolve().parents[1]
    / "deploy/peers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)
LAUNCH_CODE = "7-ALPHA-9"


@pytest.fixture(scope="session")
def shared_files() -> Path:
    """The directory the filesystem MCP server may access, holding falcon.txt."""
    root = Path(tempfile.mkdtemp(prefix="weir-e2e-files-"))
    (root / "falcon.txt").write_text(f"Project Falcon launch code: {LAUNCH_CODE}\n")
    return root


def mcp_servers(files: Path) -> str:
    """`MCP_SERVERS` of the test products: mcp-server-time (PyPI) and the official
    filesystem server (npm, pinned in deploy/peers; `make setup` installs it)."""
    assert FILESYSTEM_SERVER.is_file(), f"{FILESYSTEM_SERVER} is missing: run `make setup`"
    return json.dumps(
        [
            {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"]},
            {"name": "files", "command": "node", "args": [str(FILESYSTEM_SERVER), str(files)]},
        ]
    )


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
    stack_env: dict[str, str],
    llm: ScriptedLLM,
    collector: OTLPCollector,
    topic_prefix: str,
    shared_files: Path,
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
            "MCP_SERVERS": mcp_servers(shared_files),
        },
    )
    async with services:
        yield services


@pytest.hookimpl(tryfirst=True)  # before xdist names the groups in the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist's `--dist loadgroup` (`make test-e2e`), every end-to-end and browser test
    runs on the worker of the shared `product`, except the modules marked
    `xdist_group("own")`, which start their own services (a product of their own, the
    offline product) and run on the other: each worker starts what its tests need, once."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (
            item.get_closest_marker("e2e") or item.get_closest_marker("browser")
        ):
            item.add_marker(pytest.mark.xdist_group("product"))
