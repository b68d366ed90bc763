"""Serve an ASGI app on a free loopback port for the length of a test (real HTTP, no mocks)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import uvicorn
from fastapi import FastAPI

from weir_common.quiet_server import listening_socket


class _InProcessServer(uvicorn.Server):
    """uvicorn without signal capture: it runs as a task on the test's loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve_on_loopback(app: FastAPI) -> AsyncIterator[str]:
    """Run `app` on 127.0.0.1 and yield its base URL; stop it on exit."""
    sock = listening_socket("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = _InProcessServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("loopback server stopped during start-up")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
