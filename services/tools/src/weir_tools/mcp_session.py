"""One MCP session, owned by one long-lived task.

The SDK's transports and `ClientSession` are context managers built on anyio task groups:
they must be entered and exited in the same task. So each session lives in its own task,
which opens the transport and the session, hands the session out, and waits for a stop
signal; calls are sent on the session from any task. Closing sets the signal and waits for
the owner to leave its contexts (which also stops a stdio server process).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TextIO

import httpx2
import structlog
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from .settings import ServerConfig

log = structlog.get_logger(__name__)

CLOSE_TIMEOUT_S = 5.0
# the SDK's defaults for HTTP transports: a response stream may stay open for long
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def describe(exc: BaseException) -> str:
    """A one-line reason, unwrapping the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class OwnedSession:
    """A connected `ClientSession` and the task that owns its contexts."""

    def __init__(self, config: ServerConfig, errlog: TextIO = sys.stderr) -> None:
        self.config = config
        self._errlog = errlog
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.session: ClientSession | None = None

    async def open(self) -> ClientSession:
        """Start the owner task; return the initialised session, or raise what stopped it."""
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp:{self.config.name}")
        try:
            async with asyncio.timeout(self.config.timeout_s):
                self.session = await asyncio.shield(ready)
        except TimeoutError:
            ready.cancel()
            await self.close()
            raise TimeoutError(f"no answer within {self.config.timeout_s:g}s") from None
        except BaseException:
            await self.close()
            raise
        return self.session

    async def close(self) -> None:
        """Ask the owner to leave its contexts; cancel it if it does not in time."""
        self._stop.set()
        task, self._task, self.session = self._task, None, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT_S)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _own(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(ClientSession(*streams))
                await session.initialize()
                if not ready.done():
                    ready.set_result(session)
                await self._stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.info("mcp.session_closed", server=self.config.name, reason=describe(exc))

    async def _transport(
        self, stack: AsyncExitStack
    ) -> AbstractAsyncContextManager[TransportStreams]:
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None  # the settings validate it
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        assert config.url is not None
        if config.transport == "sse":
            return sse_client(config.url, headers=config.headers or None, timeout=config.timeout_s)
        client = await stack.enter_async_context(
            httpx2.AsyncClient(headers=config.headers or None, timeout=HTTP_TIMEOUT)
        )
        return streamable_http_client(config.url, http_client=client)
