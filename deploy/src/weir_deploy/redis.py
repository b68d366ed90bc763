"""Redis engine: a private ``redis-server`` on 127.0.0.1, or an external one (``REDIS_URL``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import structlog

from .base import EngineStartError, ensure_port_free
from .process import ManagedProcess

log = structlog.get_logger(__name__)


async def ping(url: str) -> None:
    """Raise unless the Redis server at ``url`` answers PING."""
    import redis.asyncio as aioredis  # noqa: PLC0415

    client = aioredis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        if not await client.ping():
            raise RuntimeError("PING returned false")
    finally:
        await client.aclose()


class RedisEngine:
    """A ``redis-server`` with an append-only file (fsync each second) in ``<data_dir>/redis``."""

    name = "redis"

    def __init__(
        self, data_dir: Path, port: int, *, binary: str | None = None, timeout: float = 30.0
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.binary = binary or os.environ.get("WEIR_REDIS_SERVER") or "redis-server"
        self.timeout = timeout
        self.external_url = os.environ.get("REDIS_URL")
        self.url = self.external_url or f"redis://127.0.0.1:{port}/0"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None

    async def start(self) -> None:
        """Start redis-server (or health-check the external one)."""
        began = time.monotonic()
        if self.external_url:
            try:
                await ping(self.external_url)
            except Exception as exc:
                raise EngineStartError(self.name, f"external REDIS_URL unreachable: {exc}") from exc
            self.startup_seconds = time.monotonic() - began
            return
        exe = shutil.which(self.binary)
        if exe is None:
            raise EngineStartError(
                self.name, f"{self.binary} not found (run deploy/install-system.sh)"
            )
        ensure_port_free(self.name, self.port)
        work = self.data_dir / "redis"
        work.mkdir(parents=True, exist_ok=True)
        argv = [
            exe, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(work),
            "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
            "--daemonize", "no",
            "--protected-mode", "no", "--logfile", "",
        ]  # fmt: skip
        self._proc = ManagedProcess(self.name, argv, self.data_dir / "logs", grace=5.0)
        self._proc.spawn()
        await self._proc.wait_healthy(lambda: ping(self.url), self.timeout)
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, url=self.url, seconds=self.startup_seconds)

    async def stop(self) -> None:
        """Stop the private server (no-op for an external one)."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """``REDIS_URL`` for clients."""
        return {"REDIS_URL": self.url}
