"""The quiet uvicorn server serves, and a shutdown signal ends it at once, not at its tick."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from weir_common.quiet_server import listening_socket
from weir_deploy.base import free_port

pytestmark = pytest.mark.integration

SERVER = """
import sys, uvicorn
from weir_common.quiet_server import QuietServer

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                print("shut down", flush=True)
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})

config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
QuietServer(config, tick_s=60).run()
"""


def _serving(port: int, proc: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, proc.communicate()
        try:
            return httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_long_before_its_tick(sig: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        response = _serving(port, proc)
        assert response.text == "ok"
        assert response.headers["date"], "uvicorn's Date header is still set"
        proc.send_signal(sig)
        # the tick is 60 s: only the wake-up ends it this soon; uvicorn shuts down (the
        # lifespan's shutdown runs), then raises the signal again for its default action,
        # which is to ignore SIGINT where the parent ignored it (a pytest-xdist worker)
        out, _ = proc.communicate(timeout=20)
        assert "shut down" in out
        assert proc.returncode in (0, -sig)
    finally:
        proc.kill()


async def test_connections_accepted_on_asyncios_loop_send_without_delay() -> None:
    """A listening socket that says it is TCP gets TCP_NODELAY on asyncio's own loop too:
    without it every small response waited for the client's delayed ACK (~40 ms)."""
    seen: asyncio.Queue[int] = asyncio.Queue()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        await seen.put(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    listener = listening_socket("127.0.0.1", 0)
    server = await asyncio.start_server(accepted, sock=listener)
    async with server:
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(seen.get(), 5) == 1
        writer.close()


def test_a_taken_port_is_an_error_and_leaks_no_socket() -> None:
    first = listening_socket("127.0.0.1", 0)
    first.listen()
    with first, pytest.raises(OSError, match="in use"):
        listening_socket("127.0.0.1", first.getsockname()[1])
