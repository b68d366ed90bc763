"""One MCP server at a time, against real peers: discovery, calls, time-outs, reconnects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from weir_tools.mcp_server import CallTimeoutError, McpServer, ServerUnavailableError
from weir_tools.settings import ServerConfig

from .conftest import HttpPeer, StdioPeer, time_server


class Changes:
    """Counts `on_change` notifications."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> None:
        self.count += 1


@pytest.fixture
async def servers() -> AsyncIterator[list[McpServer]]:
    """Servers a test opened; all closed at the end."""
    opened: list[McpServer] = []
    yield opened
    for server in opened:
        await server.close()


async def connected(
    opened: list[McpServer],
    config: ServerConfig,
    on_change: Callable[[], Awaitable[None]] | None = None,
) -> McpServer:
    server = McpServer(config, backoff_s=0, on_change=on_change)
    opened.append(server)
    assert await server.connect(), server.detail
    return server


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(getattr(block, "text", "") for block in content)


@pytest.mark.unit
async def test_time_server_tools_are_discovered_with_schemas(servers: list[McpServer]) -> None:
    server = await connected(servers, time_server())
    tools = {tool.name: tool for tool in server.tools}
    assert {"get_current_time", "convert_time"} <= tools.keys()
    assert "timezone" in tools["get_current_time"].input_schema["properties"]
    assert server.detail == f"{len(tools)} tools"


@pytest.mark.unit
async def test_time_server_answers_for_tokyo(servers: list[McpServer]) -> None:
    server = await connected(servers, time_server())
    result = await server.call("get_current_time", {"timezone": "Asia/Tokyo"}, timeout_s=10)
    assert not result.is_error
    assert '"timezone": "Asia/Tokyo"' in text_of(result)
    assert "+09:00" in text_of(result)


@pytest.mark.unit
async def test_everything_over_stdio_calls_with_arguments(
    servers: list[McpServer], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    server = await connected(servers, everything_stdio("everything").config)
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= {t.name for t in server.tools}
    echoed = await server.call("echo", {"message": "héllo 你好"}, timeout_s=10)
    assert text_of(echoed) == "Echo: héllo 你好"
    summed = await server.call("get-sum", {"a": 2, "b": 3}, timeout_s=10)
    assert text_of(summed) == "The sum of 2 and 3 is 5."


@pytest.mark.unit
async def test_invalid_arguments_give_an_error_result(
    servers: list[McpServer], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    server = await connected(servers, everything_stdio("everything").config)
    result = await server.call("get-sum", {"a": "two"}, timeout_s=10)
    assert result.is_error
    assert "Invalid arguments for tool get-sum" in text_of(result)


@pytest.mark.unit
async def test_slow_call_times_out_and_the_session_stays_usable(
    servers: list[McpServer], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    server = await connected(servers, everything_stdio("everything").config)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(CallTimeoutError, match=r"no answer within 0\.5s"):
        await server.call("trigger-long-running-operation", {"duration": 5, "steps": 5}, 0.5)
    assert loop.time() - began < 3
    assert text_of(await server.call("echo", {"message": "still here"}, 10)) == "Echo: still here"


@pytest.mark.unit
async def test_killed_stdio_server_is_restarted_by_the_next_call(
    servers: list[McpServer], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    peer, changes = everything_stdio("everything"), Changes()
    server = await connected(servers, peer.config, on_change=changes)
    first_pid = peer.kill()
    await asyncio.sleep(0.2)
    result = await server.call("echo", {"message": "again"}, timeout_s=10)
    assert text_of(result) == "Echo: again"
    assert peer.pid() != first_pid
    assert server.connected
    assert changes.count == 3  # connected, lost, reconnected


@pytest.mark.unit
async def test_server_that_cannot_start_is_reported_unavailable(servers: list[McpServer]) -> None:
    config = ServerConfig(name="ghost", command="/nonexistent/mcp-server", timeout_s=5)
    server = McpServer(config, backoff_s=0)
    servers.append(server)
    assert not await server.connect()
    assert not server.connected
    assert "No such file" in server.detail
    with pytest.raises(ServerUnavailableError, match=r"^server ghost is unavailable: "):
        await server.call("anything", {}, timeout_s=5)


@pytest.mark.integration
async def test_streamable_http_discovery_and_call(
    servers: list[McpServer], everything_http: Callable[[str], HttpPeer]
) -> None:
    peer = everything_http("streamableHttp")
    config = ServerConfig(name="web", transport="streamable_http", url=peer.url)
    server = await connected(servers, config)
    assert "get-sum" in {t.name for t in server.tools}
    summed = await server.call("get-sum", {"a": 40, "b": 2}, timeout_s=10)
    assert text_of(summed) == "The sum of 40 and 2 is 42."


@pytest.mark.integration
async def test_sse_discovery_and_call(
    servers: list[McpServer], everything_http: Callable[[str], HttpPeer]
) -> None:
    peer = everything_http("sse")
    server = await connected(servers, ServerConfig(name="sse", transport="sse", url=peer.url))
    assert "echo" in {t.name for t in server.tools}
    assert text_of(await server.call("echo", {"message": "over sse"}, 10)) == "Echo: over sse"


@pytest.mark.integration
async def test_http_server_gone_is_unavailable_then_reconnects_when_back(
    servers: list[McpServer], everything_http: Callable[[str], HttpPeer]
) -> None:
    peer, changes = everything_http("streamableHttp"), Changes()
    config = ServerConfig(name="web", transport="streamable_http", url=peer.url, timeout_s=5)
    server = await connected(servers, config, on_change=changes)
    peer.kill()
    with pytest.raises(ServerUnavailableError, match=r"^server web is unavailable: .*Connect"):
        await server.call("echo", {"message": "anyone?"}, timeout_s=5)
    assert not server.connected
    peer.start()
    result = await server.call("echo", {"message": "back"}, timeout_s=10)
    assert text_of(result) == "Echo: back"
    assert server.connected
    assert changes.count >= 3


@pytest.mark.unit
async def test_refresh_notices_a_dead_server_and_restarts_it(
    servers: list[McpServer], everything_stdio: Callable[[str], StdioPeer]
) -> None:
    peer, changes = everything_stdio("everything"), Changes()
    server = await connected(servers, peer.config, on_change=changes)
    await server.refresh()
    assert changes.count == 1  # the same tools: nothing to announce
    first_pid = peer.kill()
    await asyncio.sleep(0.2)
    await server.refresh()
    assert server.connected
    assert peer.pid() != first_pid
    assert changes.count == 3  # lost, reconnected
