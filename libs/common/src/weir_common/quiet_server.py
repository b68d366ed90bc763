"""A uvicorn server that sleeps while idle.

uvicorn's main loop wakes ten times a second to refresh its `Date` header and look for a
shutdown request: 0.18 % of a core per idle process here (2-core Xeon, uvloop), about a
sixth of the idle stack's CPU over six services. This one wakes once a second (the `Date`
header still changes every second) and at once on SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from types import FrameType

import uvicorn

TICK_S = 1.0
_TICKS_PER_DATE = 10  # uvicorn's `on_tick` refreshes the Date header on every tenth count


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host:port` (0: any free port) for uvicorn's `sockets=`.

    Its protocol is named (`IPPROTO_TCP`), not left 0: asyncio's own event loop sets
    TCP_NODELAY only on sockets that say they are TCP, and its connections accepted from a
    protocol-0 socket waited for the peer's delayed ACK (~40 ms) on every small response
    (measured: 44 ms per HTTP request instead of ~1 ms; uvloop sets it either way)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class QuietServer(uvicorn.Server):
    """`uvicorn.Server` with a one-second tick that a shutdown signal cuts short."""

    def __init__(self, config: uvicorn.Config, tick_s: float = TICK_S) -> None:
        super().__init__(config)
        self.tick_s = tick_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit = asyncio.Event()

    async def main_loop(self) -> None:
        """Tick once a second until `on_tick` says to exit."""
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + _TICKS_PER_DATE) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), self.tick_s)
            should_exit = await self.on_tick(counter)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's handling, then wake the main loop (signal handlers run between the
        loop's callbacks, so the wake-up goes through the loop's own thread-safe door)."""
        super().handle_exit(sig, frame)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._exit.set)
