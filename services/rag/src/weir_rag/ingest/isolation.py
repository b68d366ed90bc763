"""Parse files in separate worker processes with a time and memory budget.

Parsers of untrusted files can loop, recurse or allocate without bound (damaged PDFs, zip or
YAML bombs). A thread cannot be stopped, so parsing runs in long-lived worker processes
(`python -m weir_rag.ingest.worker`); a worker that overruns its time is killed and replaced,
and the caller gets an IngestError instead of a hang.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time

import structlog

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.model import ParsedDocument
from weir_rag.ingest.wire import FRAME, decode_result

log = structlog.get_logger(__name__)


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "weir_rag.ingest.worker", str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def send(self, header: bytes, data: bytes) -> None:
        assert self.proc.stdin is not None
        for frame in (header, data):
            self.proc.stdin.write(FRAME.pack(len(frame)) + frame)
        self.proc.stdin.flush()

    def receive(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        head = self._read(fd, FRAME.size, deadline)
        return self._read(fd, FRAME.unpack(head)[0], deadline)

    @staticmethod
    def _read(fd: int, size: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(fd, min(size - len(buf), 1 << 20))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


class ParserPool:
    """Up to `size` worker processes, started on demand and reused."""

    def __init__(self, memory_mb: int = 2048, size: int = 2) -> None:
        self._memory_mb = memory_mb
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)

    def parse(
        self, data: bytes, fmt: str, source: str, structured: bool, timeout_s: float
    ) -> ParsedDocument:
        """Parse in a worker (blocking; call from a thread). IngestError on bad input/timeout."""
        header = json.dumps({"format": fmt, "source": source, "structured": structured})
        with self._slots:
            worker = self._take()
            started = time.monotonic()
            try:
                worker.send(header.encode(), data)
                answer = worker.receive(started + timeout_s)
            except TimeoutError:
                worker.kill()
                raise IngestError(
                    f"parsing took longer than {timeout_s:g} s and was stopped"
                ) from None
            except (EOFError, BrokenPipeError):
                worker.kill()
                raise IngestError(
                    f"the parser crashed (exit code {worker.proc.returncode})"
                ) from None
            self._idle.put(worker)
        log.debug(
            "ingest.parse.worker",
            pid=worker.proc.pid,
            duration_s=round(time.monotonic() - started, 3),
        )
        return decode_result(answer)

    def _take(self) -> _Worker:
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return _Worker(self._memory_mb)
            if worker.proc.poll() is None:
                return worker

    def close(self) -> None:
        """Stop the idle workers (they also exit by themselves when this process ends)."""
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return


_POOLS: dict[int, ParserPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(memory_mb: int) -> ParserPool:
    """The process-wide pool for a memory budget (like asyncio's default executor)."""
    with _POOLS_LOCK:
        return _POOLS.setdefault(memory_mb, ParserPool(memory_mb))
