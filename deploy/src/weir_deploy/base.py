"""Shared pieces of the local stack: the `Engine` protocol, errors, paths and ports."""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import socket
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from weir_common.service_auth import TOKEN_ENV

#: ``deploy/`` folder of the repository (this file is deploy/src/weir_deploy/base.py).
DEPLOY_DIR = Path(__file__).resolve().parents[2]
#: Root of the repository (the uv workspace).
REPO_DIR = DEPLOY_DIR.parent


def service_token(env: Mapping[str, str] | None = None) -> str:
    """The credential a stack's services share (`WEIR_SERVICE_TOKEN`): the one `env` (default:
    the environment) sets, else a new random one."""
    found = (os.environ if env is None else env).get(TOKEN_ENV)
    return found or secrets.token_urlsafe(32)


class EngineStartError(RuntimeError):
    """An engine could not start: the message is one line naming the engine and the reason."""

    def __init__(self, engine: str, reason: str, log_path: Path | None = None) -> None:
        self.engine = engine
        self.reason = reason
        self.log_path = log_path
        where = f" (log: {log_path})" if log_path is not None else ""
        super().__init__(f"{engine} failed to start: {reason}{where}")


@runtime_checkable
class Engine(Protocol):
    """A backing engine of the stack (broker, database, cache, vector store)."""

    name: str

    async def start(self) -> None:
        """Start the engine and return once it answers its health check."""
        ...

    async def stop(self) -> None:
        """Stop the engine; safe to call when it never started."""
        ...

    def env(self) -> dict[str, str]:
        """Environment variables that point clients at this engine."""
        ...


def default_data_dir() -> Path:
    """The data folder: env ``DATA_DIR`` or ``<repo>/.data``."""
    raw = os.environ.get("DATA_DIR")
    return Path(raw).resolve() if raw else REPO_DIR / ".data"


# Below the kernel's ephemeral range (32768-60999 by default): a port picked there could be
# taken, before our server binds it, as the source port of some outgoing connection.
_PORT_RANGE = (20000, 32000)


def port_range(environ: Mapping[str, str] = os.environ) -> tuple[int, int]:
    """Where `free_port` picks: `_PORT_RANGE`, or under pytest-xdist the worker's own slice
    of it (its engines and services inherit the variables), so that two workers never pick
    the same port, one between the other's check and its bind (seen in CI: a service of the
    offline e2e product found its port taken a second after it was picked)."""
    worker, count = environ.get("PYTEST_XDIST_WORKER", ""), environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count and count.isdigit()):
        return _PORT_RANGE
    index, workers = int(worker[2:]), max(int(count), 1)
    size = (_PORT_RANGE[1] - _PORT_RANGE[0]) // workers
    low = _PORT_RANGE[0] + (index % workers) * size
    return low, low + size


#: Ports this process handed out lately: a port picked for one service is not bound until the
#: service starts, so without this a second pick before then could return it again (seen in
#: CI: memory and the harness of one start both given 31998; the harness bound it, memory
#: exited, and its health wait had taken the harness's /health for its own).
_HANDED_OUT: deque[int] = deque(maxlen=512)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses now, outside the ephemeral range, and not
    one of the last 512 this process handed out."""
    rng = random.SystemRandom()
    low, high = port_range()
    for _ in range(200):
        port = rng.randrange(low, high)
        if port not in _HANDED_OUT and not port_in_use(port):
            _HANDED_OUT.append(port)
            return port
    raise RuntimeError(f"no free port in {low}-{high}")


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something already listens on host:port (or it cannot be bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def ensure_port_free(engine: str, port: int) -> None:
    """Raise `EngineStartError` when the port is taken, so we never talk to a stranger."""
    if port_in_use(port):
        raise EngineStartError(engine, f"port 127.0.0.1:{port} is already in use")


def env_port(engine: str, default: int) -> int:
    """Port for an engine from env ``WEIR_<ENGINE>_PORT`` or the default."""
    raw = os.environ.get(f"WEIR_{engine.upper()}_PORT")
    return int(raw) if raw else default


async def tcp_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when a TCP connection to host:port succeeds."""
    import asyncio  # noqa: PLC0415 - keep module import light

    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True
