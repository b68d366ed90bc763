"""The tool service over real MCP servers: catalogue, names, replays, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from weir_tools.builtins import TIME, http_builtins
from weir_tools.mcp_manager import McpManager
from weir_tools.repository import MemoryResultStore
from weir_tools.service import ToolService
from weir_tools.settings import ServerConfig, ToolsSettings

from .conftest import HttpPeer, StdioPeer, time_server

MakeService = Callable[..., Awaitable[ToolService]]


@pytest.fixture
async def make_service() -> AsyncIterator[MakeService]:
    """Builds started services over the given servers; all closed at the end."""
    made: list[ToolService] = []
    async with httpx.AsyncClient() as client:

        async def make(*configs: ServerConfig, max_result_chars: int = 20_000) -> ToolService:
            builtins = [TIME, *http_builtins(ToolsSettings(), client)]
            mcp = McpManager(configs, reserved=[b.info.name for b in builtins], backoff_s=0)
            store = MemoryResultStore(ttl_s=3600)
            service = ToolService(builtins, mcp, store, max_result_chars=max_result_chars)
            made.append(service)
            await service.start()
            return service

        yield make
        for service in made:
            await service.close()


@pytest.mark.unit
async def test_catalogue_lists_builtins_and_discovered_tools(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(time_server(), everything_stdio("everything").config)
    catalog = service.catalog()
    tools = {t.name: t for t in catalog.tools}
    assert {"time", "weather", "web_search", "knowledge_search"} <= tools.keys()
    assert {"get_current_time", "convert_time", "echo", "get-sum"} <= tools.keys()
    assert tools["get_current_time"].server == "time"
    assert tools["time"].server == "builtin"
    assert tools["get-sum"].input_schema["required"] == ["a", "b"]
    servers = {s.name: s for s in catalog.servers}
    assert servers["builtin"].connected
    assert servers["time"].connected
    assert servers["everything"].connected
    assert servers["everything"].detail == "13 tools"
    assert not servers["weather"].connected


@pytest.mark.unit
async def test_same_tool_name_on_two_servers_is_qualified(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("a").config, everything_stdio("b").config)
    names = {t.name: t.server for t in service.catalog().tools}
    assert (names["echo"], names["b.echo"]) == ("a", "b")
    outcome = await service.call("b.echo", {"message": "from b"}, timeout_s=10)
    assert outcome.content == "Echo: from b"


@pytest.mark.unit
async def test_repeated_key_returns_the_stored_result_without_calling_again(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("everything").config)
    toggle = "toggle-simulated-logging"
    first = await service.call(toggle, {}, timeout_s=10, idempotency_key="k1")
    again = await service.call(toggle, {}, timeout_s=10, idempotency_key="k1")
    assert first.content.startswith("Started simulated")
    assert again.content == first.content
    assert (first.replayed, again.replayed) == (False, True)
    # the toggle ran once: a fresh call finds logging started and stops it
    fresh = await service.call(toggle, {}, timeout_s=10)
    assert fresh.content.startswith("Stopped simulated")


@pytest.mark.unit
async def test_concurrent_duplicates_run_once(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("everything").config)
    toggle = "toggle-simulated-logging"
    both = await asyncio.gather(
        *(service.call(toggle, {}, timeout_s=10, idempotency_key="k2") for _ in range(2))
    )
    assert [o.content[:7] for o in both] == ["Started", "Started"]
    assert sorted(o.replayed for o in both) == [False, True]
    assert (await service.call(toggle, {}, timeout_s=10)).content.startswith("Stopped")


@pytest.mark.unit
async def test_unknown_tool_names_what_is_available_and_what_is_down(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    ghost = ServerConfig(name="ghost", command="/nonexistent/server", timeout_s=5)
    service = await make_service(everything_stdio("everything").config, ghost)
    outcome = await service.call("nope", {}, timeout_s=5, idempotency_key="k3")
    assert outcome.is_error
    assert outcome.content.startswith("unknown tool 'nope'; available: ")
    assert "echo, get-annotated-message" in outcome.content
    assert outcome.content.endswith("; servers unavailable: ghost")
    ghost_status = next(s for s in service.catalog().servers if s.name == "ghost")
    assert not ghost_status.connected
    assert "No such file" in ghost_status.detail


@pytest.mark.unit
async def test_error_results_from_the_tool_are_results(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("everything").config)
    outcome = await service.call("get-sum", {"a": 1}, timeout_s=10)
    assert outcome.is_error
    assert "Invalid arguments for tool get-sum" in outcome.content
    bad = await service.call("knowledge_search", {"query": "q", "top_k": "many"}, timeout_s=5)
    assert bad.is_error
    assert bad.content.startswith("invalid arguments for knowledge_search: ValueError")


@pytest.mark.unit
async def test_timeout_is_an_error_result_and_not_stored(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("everything").config)
    slow = {"duration": 5, "steps": 5}
    outcome = await service.call(
        "trigger-long-running-operation", slow, timeout_s=0.5, idempotency_key="k4"
    )
    assert outcome.is_error
    assert outcome.content == (
        "tool trigger-long-running-operation on server everything timed out: no answer within 0.5s"
    )
    assert 400 < outcome.duration_ms < 3000
    retry = await service.call("echo", {"message": "x"}, timeout_s=5, idempotency_key="k4")
    assert retry.content == "Echo: x"  # the failed attempt was not stored under k4


@pytest.mark.unit
async def test_long_results_are_cut(
    make_service: MakeService, everything_stdio: Callable[[str], StdioPeer]
) -> None:
    service = await make_service(everything_stdio("everything").config, max_result_chars=100)
    outcome = await service.call("echo", {"message": "x" * 500}, timeout_s=10)
    assert outcome.content.startswith("Echo: xxx")
    assert outcome.content.endswith("… [truncated 406 characters]")


@pytest.mark.integration
async def test_server_that_stays_down_is_disconnected_in_the_catalogue(
    make_service: MakeService, everything_http: Callable[[str], HttpPeer]
) -> None:
    peer = everything_http("streamableHttp")
    config = ServerConfig(name="web", transport="streamable_http", url=peer.url, timeout_s=5)
    service = await make_service(config)
    assert "echo" in {t.name for t in service.catalog().tools}
    peer.kill()
    outcome = await service.call("echo", {"message": "hi"}, timeout_s=5)
    assert outcome.is_error
    assert outcome.content.startswith("server web is unavailable: ")
    catalog = service.catalog()
    assert "echo" not in {t.name for t in catalog.tools}
    assert not next(s for s in catalog.servers if s.name == "web").connected
    peer.start()
    assert (await service.call("echo", {"message": "hi"}, timeout_s=10)).content == "Echo: hi"
    assert "echo" in {t.name for t in service.catalog().tools}
