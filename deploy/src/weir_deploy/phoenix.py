"""The local trace viewer: Arize Phoenix (`phoenix serve`) for `TRACES=1 make run` and tests.

Phoenix and its ~150 dependencies live in their own locked environment (deploy/traces, synced
into `.data/traces-venv` by `make traces-env`), so they never enter the product's lock. It
serves its UI and OTLP/HTTP on one port (`/v1/traces`) and keeps its SQLite database under
`<data_dir>/phoenix`.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import structlog

from .base import REPO_DIR, EngineStartError, ensure_port_free, free_port
from .process import ManagedProcess
from .services import http_health

log = structlog.get_logger(__name__)

TRACES_PORT = 6006
#: `make traces-env` syncs deploy/traces/uv.lock into this environment.
TRACES_VENV = REPO_DIR / ".data" / "traces-venv"


def find_phoenix() -> Path | None:
    """The `phoenix` executable: env `WEIR_PHOENIX`, else the traces environment's."""
    raw = os.environ.get("WEIR_PHOENIX")
    exe = Path(raw) if raw else TRACES_VENV / "bin" / "phoenix"
    return exe if exe.is_file() else None


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback only
        return json.load(response)


class PhoenixEngine:
    """A `phoenix serve` on 127.0.0.1: UI and OTLP/HTTP at `url`."""

    name = "phoenix"

    def __init__(self, data_dir: Path, port: int = TRACES_PORT, *, timeout: float = 120.0) -> None:
        self.data_dir = data_dir
        self.port = port
        self.timeout = timeout
        self.url = f"http://127.0.0.1:{port}"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None

    @property
    def log_path(self) -> Path:
        """Phoenix's own log (span insertion failures are reported there)."""
        return self.data_dir / "logs" / f"{self.name}.log"

    async def start(self) -> None:
        """Start Phoenix and wait until it answers `/healthz`."""
        began = time.monotonic()
        exe = find_phoenix()
        if exe is None:
            raise EngineStartError(self.name, "Phoenix is not installed (run `make traces-env`)")
        ensure_port_free(self.name, self.port)
        work = self.data_dir / "phoenix"
        work.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(work),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self._proc = ManagedProcess(
            self.name, [str(exe), "serve"], self.data_dir / "logs", env=env, grace=10.0
        )
        self._proc.spawn()
        await self._proc.wait_healthy(lambda: http_health(f"{self.url}/healthz"), self.timeout)
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, url=self.url, seconds=self.startup_seconds)

    async def stop(self) -> None:
        """Stop Phoenix (its data stays under `<data_dir>/phoenix`)."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """Points every service's OTLP exporter at Phoenix."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.url}

    def spans(self, trace_id: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The spans Phoenix stored for `trace_id` (hex), through its REST API."""
        query = urllib.parse.urlencode({"trace_id": trace_id, "limit": limit})
        found: list[dict[str, Any]] = _get_json(f"{self.url}/v1/projects/default/spans?{query}")[
            "data"
        ]
        return found

    def rejected(self) -> list[str]:
        """Phoenix's log lines about spans it refused to store."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if "Span insertion failed" in line]
