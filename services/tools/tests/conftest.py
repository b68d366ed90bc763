"""Real MCP peers for the tools tests: `mcp-server-time` and `server-everything` (npm).

Nothing is mocked and nothing is skipped: a peer that cannot start fails the test, with the
command that installs it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from weir_deploy.base import free_port
from weir_tools.settings import ServerConfig

ROOT = Path(__file__).resolve().parents[3]
EVERYTHING = (
    ROOT / "deploy/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
START_TIMEOUT_S = 15.0


def everything_js() -> str:
    """The server-everything entry point; fails the test when it is not installed."""
    if shutil.which("node") is None:
        pytest.fail("node not found: apt-get install -y nodejs npm")
    if not EVERYTHING.is_file():
        pytest.fail(f"{EVERYTHING} missing: npm ci --prefix deploy/peers")
    return str(EVERYTHING)


def time_server(name: str = "time") -> ServerConfig:
    """`mcp-server-time` over stdio, run by this interpreter."""
    return ServerConfig(name=name, command=sys.executable, args=["-m", "mcp_server_time"])


@dataclass
class StdioPeer:
    """server-everything over stdio, started through a shell that records its pid."""

    config: ServerConfig
    pidfile: Path

    def kill(self) -> int:
        """SIGKILL the running server; return the pid it had."""
        pid = int(self.pidfile.read_text())
        os.kill(pid, signal.SIGKILL)
        return pid

    def pid(self) -> int:
        """The pid of the server started last."""
        return int(self.pidfile.read_text())


@pytest.fixture
def everything_stdio(tmp_path: Path) -> Callable[[str], StdioPeer]:
    """Builds stdio server-everything configs; `exec` keeps the recorded pid the server's."""
    script = everything_js()

    def make(name: str = "everything") -> StdioPeer:
        pidfile = tmp_path / f"{name}.pid"
        command = f'echo $$ > "{pidfile}"; exec node "{script}" stdio'
        return StdioPeer(ServerConfig(name=name, command="sh", args=["-c", command]), pidfile)

    return make


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server-everything exited with {proc.returncode}: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"server-everything did not listen on {port} in {START_TIMEOUT_S}s")


@dataclass
class HttpPeer:
    """server-everything over HTTP (`streamableHttp` or `sse`) on its own port."""

    mode: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        path = "mcp" if self.mode == "streamableHttp" else "sse"
        return f"http://127.0.0.1:{self.port}/{path}"

    def start(self) -> None:
        """Start the server (again, on the same port) and wait until it listens."""
        env = {**os.environ, "PORT": str(self.port)}
        with self.log.open("ab") as out:
            argv = ["node", everything_js(), self.mode]
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        _wait_for_port(self.proc, self.port, self.log)

    def kill(self) -> None:
        """SIGKILL the server and wait for it to be gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def everything_http(tmp_path: Path) -> Iterator[Callable[[str], HttpPeer]]:
    """Starts server-everything over HTTP; every server started is killed at the end."""
    peers: list[HttpPeer] = []

    def start(mode: str = "streamableHttp") -> HttpPeer:
        peer = HttpPeer(mode, free_port(), tmp_path / f"everything-{mode}.log")
        peers.append(peer)
        peer.start()
        return peer

    yield start
    for peer in peers:
        peer.kill()
