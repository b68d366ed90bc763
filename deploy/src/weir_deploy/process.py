"""A managed child process: log file, health wait, early-exit detection, clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import structlog

from .base import EngineStartError

log = structlog.get_logger(__name__)

HealthCheck = Callable[[], Awaitable[object]]


def tail(path: Path, lines: int = 15) -> str:
    """Last lines of a log file joined with `` | `` (empty when there is no file)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)


class ManagedProcess:
    """One child process in its own process group, logging to ``<log_dir>/<name>.log``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        grace: float = 10.0,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stop_signal = stop_signal
        self.grace = grace
        self.log_path = log_dir / f"{name}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """Process id of the child, when started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """Exit code of the child once it has exited."""
        return self._proc.poll() if self._proc is not None else None

    def running(self) -> bool:
        """True while the child has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def spawn(self) -> None:
        """Start the child in a new session (its own process group)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            out.write(f"\n=== {time.strftime('%F %T')} start: {' '.join(self.argv)}\n".encode())
            out.flush()
            try:
                self._proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,
                )
            except OSError as exc:
                raise EngineStartError(self.name, f"cannot run {self.argv[0]}: {exc}") from exc
        log.info("process.spawned", engine=self.name, pid=self._proc.pid, log=str(self.log_path))

    def _failure(self, reason: str) -> EngineStartError:
        last = tail(self.log_path)
        detail = f"{reason}; last log lines: {last}" if last else reason
        return EngineStartError(self.name, detail, self.log_path)

    async def wait_healthy(self, check: HealthCheck, max_wait: float) -> float:
        """Poll ``check`` until it passes; return seconds waited or raise `EngineStartError`."""
        if self._proc is None:
            raise EngineStartError(self.name, "wait_healthy called before spawn")
        started = time.monotonic()
        last_error = "no health check passed yet"
        delay = 0.05
        while True:
            code = self._proc.poll()
            if code is not None:
                raise self._failure(f"process exited early with code {code}")
            try:
                await asyncio.wait_for(check(), timeout=max(5.0, max_wait / 4))
            except Exception as exc:
                last_error = f"{type(exc).__name__}: {exc}".strip()
            else:
                if self._proc.poll() is None:
                    return time.monotonic() - started
            if time.monotonic() - started > max_wait:
                await self.stop()
                raise self._failure(f"not healthy after {max_wait:.0f}s ({last_error})")
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    async def stop(self) -> None:
        """Signal the process group, wait ``grace`` seconds, then SIGKILL it."""
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid
        if proc.poll() is None:
            _killpg(pgid, self.stop_signal)
            try:
                await asyncio.to_thread(proc.wait, self.grace)
            except subprocess.TimeoutExpired:
                log.warning("process.kill", engine=self.name, pid=pgid, grace=self.grace)
        # Children may outlive the leader: always sweep the group.
        _killpg(pgid, signal.SIGKILL)
        if proc.poll() is None:
            await asyncio.to_thread(proc.wait)
        log.info("process.stopped", engine=self.name, pid=pgid, code=proc.returncode)
        self._proc = None


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def run_tool(
    engine: str,
    argv: Sequence[str],
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    max_wait: float = 120.0,
) -> str:
    """Run a one-shot command (initdb, storage format, mvn); output is appended to the log."""

    def _run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            env=dict(env) if env is not None else None,
            timeout=max_wait,
            check=False,
        )

    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        result = await asyncio.to_thread(_run)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineStartError(engine, f"{argv[0]} failed: {exc}", log_path) from exc
    with log_path.open("a") as out:
        out.write(f"\n=== {time.strftime('%F %T')} run: {' '.join(argv)}\n")
        out.write(result.stdout)
        out.write(result.stderr)
    if result.returncode != 0:
        last = tail(log_path, 8)
        raise EngineStartError(
            engine, f"{Path(argv[0]).name} exited with code {result.returncode}: {last}", log_path
        )
    return result.stdout
