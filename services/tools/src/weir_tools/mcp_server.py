"""One configured MCP server: its session, its tools, and reconnecting when it dies.

A dead server is noticed when a call on its session fails with "connection closed" (a
stdio process that exited, an HTTP server that went away), or by the periodic refresh. The
call then reconnects, lists the tools again and is sent once more on the new session; if the
server stays down the call fails with `ServerUnavailableError` and the server is reported
disconnected. Connect attempts are spaced by `backoff_s`, so a server that is down is not
hammered by every call.

Sending once more is at-least-once: a server that died while running the call may have
done part of it. That matches the rest of the platform (the harness re-sends commands whose
results do not come), and a server that died before the call arrived, the common case, runs
it once.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import httpx2
import structlog
from mcp import ClientSession, MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    PaginatedRequestParams,
    Tool,
)

from .mcp_session import OwnedSession, describe
from .settings import ServerConfig

log = structlog.get_logger(__name__)

# what a transport raises when its peer is gone, besides MCPError(CONNECTION_CLOSED)
CONNECTION_ERRORS = (OSError, EOFError, httpx2.TransportError)
TIMEOUT_GRACE_S = 1.0


class ServerUnavailableError(RuntimeError):
    """The server could not be reached, now or after a reconnect."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"server {server} is unavailable: {reason}")


class CallTimeoutError(RuntimeError):
    """The server did not answer the call in time."""


class SessionLostError(RuntimeError):
    """The session is dead: its server process exited or its HTTP server went away."""


class McpServer:
    """The client side of one MCP server; `on_change` runs after every (re)connect or loss."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        backoff_s: float = 1.0,
        on_change: Callable[[], Awaitable[None]] | None = None,
        errlog: TextIO = sys.stderr,
    ) -> None:
        self.config = config
        self.tools: list[Tool] = []
        self.detail = "not connected yet"
        self._backoff_s = backoff_s
        self._on_change = on_change
        self._errlog = errlog
        self._owned: OwnedSession | None = None
        self._generation = 0
        self._last_attempt = float("-inf")
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.config.name

    @property
    def connected(self) -> bool:
        """True while a session is open (it may still turn out dead on the next call)."""
        return self._owned is not None and self._owned.session is not None

    async def connect(self) -> bool:
        """Connect (or reconnect) now, whatever the backoff; True when it worked."""
        async with self._lock:
            await self._reconnect()
        return self.connected

    async def refresh(self) -> None:
        """List the tools again on a live session; reconnect one that is (or turns out) dead."""
        owned, generation = self._owned, self._generation
        if owned is not None and owned.session is not None:
            try:
                tools = await _list_tools(owned.session, self.config.timeout_s)
            except (MCPError, TimeoutError, *CONNECTION_ERRORS) as exc:
                await self._lose(generation, describe(exc))
            else:
                changed, self.tools = tools != self.tools, tools
                if changed:
                    await self._changed()
                return
        async with self._lock:
            if not self.connected and time.monotonic() - self._last_attempt >= self._backoff_s:
                await self._reconnect()

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> CallToolResult:
        """Call `tool`; reconnect and send again once if the session turns out dead."""
        session, generation = await self._session()
        try:
            return await _call(session, tool, arguments, timeout_s)
        except SessionLostError as exc:
            await self._lose(generation, str(exc))
        log.info("mcp.call_resent", server=self.name, tool=tool)
        session, generation = await self._session()
        try:
            return await _call(session, tool, arguments, timeout_s)
        except SessionLostError as exc:
            await self._lose(generation, str(exc))
            raise ServerUnavailableError(self.name, str(exc)) from exc

    async def close(self) -> None:
        """Close the session (a stdio server process is stopped)."""
        async with self._lock:
            if self._owned is not None:
                await self._owned.close()
                self._owned = None

    async def _session(self) -> tuple[ClientSession, int]:
        async with self._lock:
            owned = self._owned
            if owned is None or owned.session is None:
                if time.monotonic() - self._last_attempt < self._backoff_s:
                    raise ServerUnavailableError(self.name, self.detail)
                await self._reconnect()
            if self._owned is None or self._owned.session is None:
                raise ServerUnavailableError(self.name, self.detail)
            return self._owned.session, self._generation

    async def _reconnect(self) -> None:
        """Open a new session and list its tools (the lock is held)."""
        if self._owned is not None:
            await self._owned.close()
            self._owned = None
        self._last_attempt = time.monotonic()
        owned = OwnedSession(self.config, self._errlog)
        try:
            session = await owned.open()
            self.tools = await _list_tools(session, self.config.timeout_s)
        except Exception as exc:
            await owned.close()
            self.detail = describe(exc)
            log.warning("mcp.connect_failed", server=self.name, reason=self.detail)
        else:
            self._owned, self._generation = owned, self._generation + 1
            self.detail = f"{len(self.tools)} tools"
            log.info("mcp.connected", server=self.name, tools=len(self.tools))
        await self._changed()

    async def _lose(self, generation: int, reason: str) -> None:
        """Drop the session a call found dead, unless another call already replaced it."""
        async with self._lock:
            if generation != self._generation or self._owned is None:
                return
            await self._owned.close()
            self._owned, self.detail = None, reason
            log.warning("mcp.connection_lost", server=self.name, reason=reason)
        await self._changed()

    async def _changed(self) -> None:
        if self._on_change is not None:
            await self._on_change()


async def _list_tools(session: ClientSession, timeout_s: float) -> list[Tool]:
    """Every tool of the server, following pagination."""
    tools: list[Tool] = []
    cursor: str | None = None
    async with asyncio.timeout(timeout_s):
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools


async def _call(
    session: ClientSession, tool: str, arguments: dict[str, Any], timeout_s: float
) -> CallToolResult:
    """One `tools/call`; a dead session raises `SessionLostError`, a slow one `CallTimeoutError`.

    The SDK enforces `timeout_s`; the outer limit only guards against a transport that
    blocks before the request is even sent.
    """
    try:
        async with asyncio.timeout(timeout_s + TIMEOUT_GRACE_S):
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            raise SessionLostError(exc.message) from exc
        if exc.code == REQUEST_TIMEOUT:
            raise CallTimeoutError(f"no answer within {timeout_s:g}s") from exc
        raise
    except TimeoutError as exc:
        raise CallTimeoutError(f"no answer within {timeout_s:g}s") from exc
    except CONNECTION_ERRORS as exc:
        raise SessionLostError(describe(exc)) from exc
