"""`Stack`: start the selected engines concurrently, merge their env, stop them cleanly."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import structlog

from weir_common.service_auth import TOKEN_ENV

from .base import Engine, EngineStartError, default_data_dir, env_port, free_port, service_token
from .elasticsearch import ElasticsearchEngine
from .kafka import make_kafka
from .milvus import MilvusEngine
from .postgres import PostgresEngine
from .redis import RedisEngine

log = structlog.get_logger(__name__)

ALL_ENGINES: tuple[str, ...] = ("kafka", "postgres", "redis", "milvus")
#: Started only when asked for by name (``up --engines ... elasticsearch``, test fixtures).
OPTIONAL_ENGINES: tuple[str, ...] = ("elasticsearch",)
KNOWN_ENGINES: tuple[str, ...] = ALL_ENGINES + OPTIONAL_ENGINES
DEFAULT_PORTS: dict[str, int] = {
    "kafka": 19092,
    "postgres": 15432,
    "redis": 16379,
    "milvus": 19530,
    "elasticsearch": 19200,
}


class Stack:
    """The local engines, as an async context manager.

    ``ephemeral=True`` picks free random ports and a fresh temporary data folder (tests);
    otherwise fixed ports (overridable by ``WEIR_<ENGINE>_PORT``) and ``DATA_DIR``.
    ``durable`` (default: not ephemeral) makes PostgreSQL fsync its commits, so the data of
    an ephemeral stack given its own ``data_dir`` survives restarts as ``make run``'s does.
    """

    def __init__(
        self,
        engines: Sequence[str] = ALL_ENGINES,
        *,
        ephemeral: bool = False,
        data_dir: Path | None = None,
        kafka_impl: str | None = None,
        durable: bool | None = None,
    ) -> None:
        unknown = [name for name in engines if name not in KNOWN_ENGINES]
        if unknown:
            raise ValueError(f"unknown engines {unknown}; choose from {KNOWN_ENGINES}")
        self.names = tuple(engines)
        self.ephemeral = ephemeral
        self.durable = not ephemeral if durable is None else durable
        self._owns_data_dir = data_dir is None and ephemeral
        self._failed = False
        self._ever_started = False
        if data_dir is None:
            data_dir = (
                Path(tempfile.mkdtemp(prefix="weir-stack-")) if ephemeral else default_data_dir()
            )
        self.data_dir = data_dir.resolve()
        self.kafka_impl = kafka_impl
        self.engines: list[Engine] = [self._make(name) for name in self.names]
        self.startup_seconds: dict[str, float] = {}
        self._started: list[Engine] = []
        #: the service credential of this stack (``WEIR_SERVICE_TOKEN``, else a random one)
        self.service_token = service_token()

    def _port(self, name: str) -> int:
        return free_port() if self.ephemeral else env_port(name, DEFAULT_PORTS[name])

    def _make(self, name: str) -> Engine:
        port = self._port(name)
        if name == "kafka":
            controller = None if self.ephemeral else env_port("kafka_controller", port + 1)
            return make_kafka(self.data_dir, port, self.kafka_impl, controller)
        if name == "postgres":
            return PostgresEngine(self.data_dir, port, durable=self.durable)
        if name == "redis":
            return RedisEngine(self.data_dir, port)
        if name == "elasticsearch":
            return ElasticsearchEngine(self.data_dir, port)
        return MilvusEngine(self.data_dir, port)

    def engine(self, name: str) -> Engine:
        """The engine called ``name``."""
        for engine in self.engines:
            if engine.name == name:
                return engine
        raise KeyError(name)

    async def _start_one(self, engine: Engine) -> None:
        began = time.monotonic()
        for attempt in range(3):
            try:
                await engine.start()
                break
            except EngineStartError as exc:
                # Random ports can be grabbed by someone else between pick and bind: re-pick,
                # but only on a first start (a restart must keep the ports its data knows).
                taken = "already in use" in exc.reason
                repick = taken and self.ephemeral and not self._ever_started
                if not repick or attempt == 2:
                    raise
                log.warning("stack.port_retry", engine=engine.name, reason=exc.reason)
                index = self.engines.index(engine)
                engine = self.engines[index] = self._make(engine.name)
        self._started.append(engine)
        self.startup_seconds[engine.name] = round(time.monotonic() - began, 2)

    async def start(self) -> None:
        """Start all engines concurrently; on any failure stop the rest and raise."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        log.info("stack.starting", engines=self.names, data_dir=str(self.data_dir))
        tasks = {asyncio.create_task(self._start_one(e)): e for e in self.engines}
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except BaseException:
            self._failed = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.stop()
            raise
        failed = [task for task in done if task.exception() is not None]
        if failed:
            self._failed = True
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self.stop()
            error = failed[0].exception()
            if isinstance(error, EngineStartError):
                raise error
            name = tasks[failed[0]].name
            raise EngineStartError(name, f"{type(error).__name__}: {error}") from error
        self._ever_started = True
        self.write_env_file()
        log.info("stack.ready", seconds=self.startup_seconds)

    async def stop(self) -> None:
        """Stop every engine that started (in parallel); errors are logged, not raised."""
        started, self._started = self._started, []
        # Engines that failed mid-start may still own a process: stop them all.
        results = await asyncio.gather(
            *(engine.stop() for engine in self.engines), return_exceptions=True
        )
        for engine, result in zip(self.engines, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("stack.stop_failed", engine=engine.name, error=str(result))
        if started:
            log.info("stack.stopped", engines=[engine.name for engine in started])
        if self._owns_data_dir and not self._failed and self.data_dir.exists():
            # A temporary folder of a healthy run; after a failure keep it for its logs.
            await asyncio.to_thread(shutil.rmtree, self.data_dir, True)

    def env(self) -> dict[str, str]:
        """The merged client env of all engines plus ``DATA_DIR``."""
        merged = {"DATA_DIR": str(self.data_dir)}
        for engine in self.engines:
            merged.update(engine.env())
        return merged

    def services_env(self) -> dict[str, str]:
        """`env()` plus ``WEIR_SERVICE_TOKEN``, the credential the stack's services share."""
        return {**self.env(), TOKEN_ENV: self.service_token}

    def write_env_file(self) -> Path:
        """Write ``<data_dir>/stack.env`` with ``KEY=VALUE`` lines; return its path."""
        path = self.data_dir / "stack.env"
        path.write_text("".join(f"{key}={value}\n" for key, value in sorted(self.env().items())))
        return path

    async def __aenter__(self) -> Stack:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def apply_env(env: dict[str, str]) -> None:
    """Export a stack env into ``os.environ`` (for in-process clients)."""
    os.environ.update(env)
