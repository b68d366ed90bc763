"""Milvus engine: Milvus Lite in server mode, or an external Milvus (``MILVUS_URI``)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
from pathlib import Path

import structlog

from .base import EngineStartError, ensure_port_free, tcp_open
from .process import ManagedProcess

log = structlog.get_logger(__name__)


def _list_collections(uri: str) -> list[str]:
    from pymilvus import MilvusClient  # noqa: PLC0415 - slow import, only when needed

    # dedicated: closed on `close`, never left idle in pymilvus's shared connection registry
    client = MilvusClient(uri=uri, timeout=5, dedicated=True)
    try:
        names: list[str] = client.list_collections()
        return names
    finally:
        client.close()


async def check(uri: str) -> None:
    """Raise unless the Milvus server at ``uri`` lists its collections."""
    await asyncio.to_thread(_list_collections, uri)


def find_milvus_lite() -> str | None:
    """Where the ``milvus_lite`` package is installed (None when it is not)."""
    spec = importlib.util.find_spec("milvus_lite")
    return spec.origin if spec is not None else None


class MilvusEngine:
    """Milvus Lite's server (`weir_deploy.milvus_server`) with data under ``<data_dir>/milvus``."""

    name = "milvus"

    def __init__(self, data_dir: Path, port: int, *, timeout: float = 120.0) -> None:
        self.data_dir = data_dir
        self.port = port
        self.timeout = timeout
        self.external_uri = os.environ.get("MILVUS_URI")
        self.uri = self.external_uri or f"http://127.0.0.1:{port}"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None

    async def _health(self) -> None:
        if not await tcp_open(self.port):
            raise ConnectionError(f"port {self.port} not open yet")
        await check(self.uri)

    async def start(self) -> None:
        """Start the Milvus Lite server (or health-check the external one)."""
        began = time.monotonic()
        if self.external_uri:
            try:
                await check(self.external_uri)
            except Exception as exc:
                raise EngineStartError(
                    self.name, f"external MILVUS_URI unreachable: {exc}"
                ) from exc
            self.startup_seconds = time.monotonic() - began
            return
        if find_milvus_lite() is None:
            raise EngineStartError(self.name, "the milvus-lite package is not installed")
        ensure_port_free(self.name, self.port)
        work = self.data_dir / "milvus"
        work.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "weir_deploy.milvus_server", "--data-dir", str(work),
                "--host", "127.0.0.1", "--port", str(self.port)]  # fmt: skip
        # a stop closes the collections, which waits for the index files being written
        self._proc = ManagedProcess(self.name, argv, self.data_dir / "logs", grace=30.0)
        self._proc.spawn()
        await self._proc.wait_healthy(self._health, self.timeout)
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, uri=self.uri, seconds=self.startup_seconds)

    async def stop(self) -> None:
        """Stop the private server (no-op for an external one)."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """``MILVUS_URI`` for clients."""
        return {"MILVUS_URI": self.uri}
