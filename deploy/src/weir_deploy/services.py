"""Run weir's own services (``python -m weir_<name>``) as child processes with health waits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from weir_common.service_auth import TOKEN_ENV, service_headers

from .base import EngineStartError, ensure_port_free, env_port, free_port, service_token
from .process import ManagedProcess

log = structlog.get_logger(__name__)

DEFAULT_SERVICES: tuple[str, ...] = ("gateway", "harness", "router", "memory", "rag", "tools")
GATEWAY_PORT = 8000
RESTART_DELAY_S = 0.5  # first restart of a crashed service; doubles up to the maximum
MAX_RESTART_DELAY_S = 10.0
HEALTHY_RESET_S = 60.0  # up this long: the next crash starts the backoff again
#: Identity of test and benchmark stacks: many users, each named by `X-User-Id` from a
#: loopback client standing in for a trusted proxy (`make run` itself is `local`).
LOOPBACK_PROXY_AUTH = {"AUTH_MODE": "proxy", "AUTH_PROXY_TRUSTED": "127.0.0.1/32,::1/128"}


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback http only
        status: int = response.status
        return status, response.read()


async def http_health(url: str, service: str | None = None) -> None:
    """Raise unless ``GET url`` answers 200 and, given `service`, names that service (weir's
    ``/health``: ``{"service": …}``), so that another process on the port is not taken for
    it."""
    status, body = await asyncio.to_thread(_get, url)
    if status != 200:
        raise RuntimeError(f"GET {url} answered {status}")
    if service is not None:
        try:
            named = json.loads(body).get("service")
        except (ValueError, AttributeError):
            named = None
        if named != service:
            raise RuntimeError(f"GET {url} answered for {named!r}, not {service!r}")


async def _answers(url: str, service: str) -> bool:
    """True when ``GET url`` answers 200 for `service` now (one still starting does not)."""
    try:
        await http_health(url, service)
    except (OSError, RuntimeError):
        return False
    return True


class Services:
    """weir's services, each ``python -m <prefix><name>`` with ``SERVICE_PORT`` for /health.

    Every service gets the same ``WEIR_SERVICE_TOKEN``: the one the given env (or the
    environment) sets, else a new random one; `headers()` carries it for direct calls.
    """

    def __init__(
        self,
        stack_env: Mapping[str, str],
        log_dir: Path,
        *,
        names: Sequence[str] = DEFAULT_SERVICES,
        gateway_port: int | None = None,
        module_prefix: str = "weir_",
        extra_env: Mapping[str, str] | None = None,
        timeout: float = 120.0,
        supervise: bool = False,
    ) -> None:
        self.names = tuple(names)
        self.supervise = supervise
        self.log_dir = log_dir
        self.module_prefix = module_prefix
        self.timeout = timeout
        self.ports: dict[str, int] = {}
        for name in self.names:
            if name == "gateway":
                self.ports[name] = gateway_port or env_port("gateway", GATEWAY_PORT)
            else:
                self.ports[name] = free_port()
        self.base_env = {**os.environ, **stack_env, **(extra_env or {})}
        self.service_token = service_token(self.base_env)
        self.base_env[TOKEN_ENV] = self.service_token
        for name, port in self.ports.items():
            self.base_env[f"WEIR_{name.upper()}_URL"] = f"http://127.0.0.1:{port}"
        # the harness routes knowledge questions to retrieval only when a rag service runs
        self.base_env.setdefault("RAG_CONNECTED", "true" if "rag" in self.names else "false")
        self._procs: dict[str, ManagedProcess] = {}
        self.startup_seconds: dict[str, float] = {}
        self.restarts: dict[str, int] = dict.fromkeys(self.names, 0)
        self._supervisor: asyncio.Task[None] | None = None

    def url(self, name: str) -> str:
        """Base URL of a service."""
        return f"http://127.0.0.1:{self.ports[name]}"

    def headers(self) -> dict[str, str]:
        """The header a direct call to a service's internal API needs (its credential)."""
        return service_headers(self.service_token)

    def pid(self, name: str) -> int | None:
        """The process id of the service's current child (None while it is down)."""
        proc = self._procs.get(name)
        return proc.pid if proc is not None and proc.running() else None

    async def wait_healthy(self, name: str, timeout_s: float) -> None:
        """Wait until the service's current child answers ``/health`` (raise on time-out)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.pid(name) is not None and await _answers(f"{self.url(name)}/health", name):
                return
            if time.monotonic() > deadline:
                raise EngineStartError(name, f"not healthy after {timeout_s:.0f}s")
            await asyncio.sleep(0.1)

    def _spawn(self, name: str) -> ManagedProcess:
        port = self.ports[name]
        ensure_port_free(name, port)
        env = {**self.base_env, "SERVICE_PORT": str(port), "SERVICE_NAME": name}
        argv = [sys.executable, "-m", f"{self.module_prefix}{name}"]
        proc = ManagedProcess(name, argv, self.log_dir, env=env, grace=10.0)
        self._procs[name] = proc
        proc.spawn()
        return proc

    async def _start_one(self, name: str) -> None:
        began = time.monotonic()
        proc = self._spawn(name)
        await proc.wait_healthy(lambda: http_health(f"{self.url(name)}/health", name), self.timeout)
        self.startup_seconds[name] = round(time.monotonic() - began, 2)
        log.info("service.ready", service=name, url=self.url(name),
                 seconds=self.startup_seconds[name])  # fmt: skip

    async def start(self) -> None:
        """Start all services concurrently; on a failure stop them all and raise."""
        results = await asyncio.gather(
            *(self._start_one(name) for name in self.names), return_exceptions=True
        )
        for name, result in zip(self.names, results, strict=True):
            if isinstance(result, BaseException):
                await self.stop()
                if isinstance(result, EngineStartError):
                    raise result
                raise EngineStartError(name, f"{type(result).__name__}: {result}") from result
        if self.supervise:
            self._supervisor = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        """Restart a service whose process exited, with backoff; the others keep running."""
        delays = dict.fromkeys(self.names, RESTART_DELAY_S)
        up_since = dict.fromkeys(self.names, time.monotonic())
        restarting: dict[str, asyncio.Task[None]] = {}

        async def restart(name: str) -> None:
            if time.monotonic() - up_since[name] > HEALTHY_RESET_S:
                delays[name] = RESTART_DELAY_S
            log.warning("service.exited", service=name, code=self._procs[name].returncode,
                        restart_in_s=delays[name])  # fmt: skip
            await asyncio.sleep(delays[name])
            delays[name] = min(delays[name] * 2, MAX_RESTART_DELAY_S)
            await self._procs[name].stop()
            try:
                self._spawn(name)
            except EngineStartError as exc:
                log.warning("service.restart_failed", service=name, error=str(exc))
                return
            self.restarts[name] += 1
            up_since[name] = time.monotonic()
            log.info("service.restarted", service=name, restarts=self.restarts[name])

        try:
            while True:
                await asyncio.sleep(0.2)
                for name in self.exited():
                    task = restarting.get(name)
                    if task is None or task.done():
                        restarting[name] = asyncio.create_task(restart(name))
        finally:
            for task in restarting.values():
                task.cancel()
            await asyncio.gather(*restarting.values(), return_exceptions=True)

    async def stop(self) -> None:
        """Stop all services (SIGTERM, then SIGKILL after the grace period)."""
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        procs, self._procs = self._procs, {}
        await asyncio.gather(*(proc.stop() for proc in procs.values()), return_exceptions=True)

    def exited(self) -> list[str]:
        """Names of services whose process has died since start."""
        return [name for name, proc in list(self._procs.items()) if not proc.running()]

    async def __aenter__(self) -> Services:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
