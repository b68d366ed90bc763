"""Every configured MCP server: discovery, the tool names they expose, and calls.

A tool keeps its own name unless a built-in tool or an earlier server already uses it;
then it is exposed as `<server>.<tool>`. Names do not depend on which servers are up, so a
planner's choice stays valid across reconnects. Only connected servers' tools are in the
catalogue, but a call to a known tool of a server that is down still tries to reconnect.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from mcp import MCPError
from mcp.types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from weir_common.events import ServerStatus, ToolInfo

from .confirm import ConfirmRules, by_annotations
from .mcp_server import CallTimeoutError, McpServer, ServerUnavailableError
from .models import ToolOutcome
from .settings import ServerConfig


@dataclass(frozen=True)
class McpRoute:
    """Where an exposed tool name leads: a server and that server's own name for the tool."""

    server: McpServer
    tool: str
    info: ToolInfo
    repeatable: bool = False


class McpManager:
    """The MCP servers of this service; `on_change` runs when one connects or is lost.

    `reserved` names (the built-in tools) are never given to an MCP tool unqualified.
    """

    def __init__(
        self,
        configs: Iterable[ServerConfig],
        *,
        reserved: Iterable[str] = (),
        backoff_s: float = 1.0,
        confirm: ConfirmRules | None = None,
        on_change: Callable[[], Awaitable[None]] | None = None,
        errlog: TextIO = sys.stderr,
    ) -> None:
        self._reserved = frozenset(reserved)
        self._confirm = confirm or ConfirmRules()
        self._on_change = on_change
        self._routes: dict[str, McpRoute] | None = None
        self.servers = [
            McpServer(c, backoff_s=backoff_s, on_change=self._changed, errlog=errlog)
            for c in configs
        ]

    async def _changed(self) -> None:
        self._routes = None
        if self._on_change is not None:
            await self._on_change()

    async def start(self) -> None:
        """Connect every server at once; one that is down is reported, not fatal."""
        await asyncio.gather(*(s.connect() for s in self.servers))

    async def refresh(self) -> None:
        """Re-list tools of live servers and try to reconnect the others."""
        await asyncio.gather(*(s.refresh() for s in self.servers))

    async def close(self) -> None:
        """Close every session (stdio server processes are stopped)."""
        await asyncio.gather(*(s.close() for s in self.servers))

    def routes(self) -> dict[str, McpRoute]:
        """Exposed name → route for every known tool, live or not (cached until a change)."""
        if self._routes is None:
            self._routes = self._build_routes()
        return self._routes

    def _build_routes(self) -> dict[str, McpRoute]:
        used = set(self._reserved)
        routes: dict[str, McpRoute] = {}
        for server in self.servers:
            for tool in server.tools:
                name = tool.name if tool.name not in used else f"{server.name}.{tool.name}"
                used.add(name)
                info = ToolInfo(
                    name=name,
                    description=tool.description or "",
                    input_schema=tool.input_schema,
                    server=server.name,
                )
                hints = tool.annotations
                default = server.config.confirm
                info = self._confirm.apply(
                    info,
                    by_annotations(hints) if default is None else default,
                    f"{server.name}.{tool.name}",
                )
                repeatable = hints is not None and bool(
                    hints.read_only_hint or hints.idempotent_hint
                )
                routes[name] = McpRoute(server, tool.name, info, repeatable)
        return routes

    def statuses(self) -> list[ServerStatus]:
        """Whether each server is connected, with its tool count or why it is not."""
        return [
            ServerStatus(name=s.name, connected=s.connected, detail=s.detail) for s in self.servers
        ]

    async def call(
        self, route: McpRoute, arguments: dict[str, Any], timeout_s: float
    ) -> ToolOutcome:
        """Call the tool `route` leads to; failures become error outcomes."""
        began = time.perf_counter()
        outcome = await _outcome(route.server, route.tool, arguments, timeout_s)
        ms = (time.perf_counter() - began) * 1000
        return outcome.model_copy(update={"duration_ms": ms})


async def _outcome(
    server: McpServer, tool: str, arguments: dict[str, Any], timeout_s: float
) -> ToolOutcome:
    try:
        result = await server.call(tool, arguments, timeout_s)
    except ServerUnavailableError as exc:
        return ToolOutcome.failure(str(exc))
    except CallTimeoutError as exc:
        return ToolOutcome.failure(f"tool {tool} on server {server.name} timed out: {exc}")
    except MCPError as exc:
        return ToolOutcome(content=f"MCP error {exc.code}: {exc.message}", is_error=True)
    return ToolOutcome(content=render(result), is_error=result.is_error)


def render(result: CallToolResult) -> str:
    """A tool result as text: its text blocks, or its structured content as JSON."""
    parts = [_block_text(block) for block in result.content]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]"
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri}: {block.name}]"
    return f"[{block.type} ({block.mime_type})]"
