"""Milvus Lite's gRPC server, started so that a stop or a crash loses no index.

Milvus Lite writes a segment's index file (``indexes/*.idx``, ``*.sidx``) in place, the first
time the segment is loaded, and later reads any file it finds there. A process stopped while
it writes leaves a short file, often empty, and the collection cannot be loaded again
("No data left in file"). Its server closes its collections, waiting for such writes, on
``KeyboardInterrupt`` only: a SIGTERM kills it where it stands.

Here SIGTERM stops it the same way as Ctrl-C, and a stop that closed the collections leaves a
mark (`CLEAN_STOP`) in the data folder. Without that mark (a crash, a kill, the first start)
every index file is read back before the server serves, and one that does not read is
removed: the index is derived from the segment's data, and Milvus Lite builds it again when
it loads the segment. After a clean stop nothing is read twice.

Run as ``python -m weir_deploy.milvus_server --data-dir DIR --host H --port P``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog

log = structlog.get_logger(__name__)

_FAISS = ("hnsw", "hnsw_sq", "ivf_flat", "ivf_sq8")
#: Left in the data folder by a stop that closed every collection (removed at start).
CLEAN_STOP = ".weir-clean-stop"


def _read_npy(path: Path) -> None:
    import numpy as np  # noqa: PLC0415 - only in the server's process

    # a memory map checks the header and that the file holds the whole array, reading no rows
    np.load(path, mmap_mode="r", allow_pickle=False)


def _read_faiss(path: Path) -> None:
    import faiss  # noqa: PLC0415

    faiss.read_index(str(path))


def _read_arrow_file(path: Path) -> None:
    import pyarrow as pa  # noqa: PLC0415

    with pa.memory_map(str(path), "r") as source:
        pa.ipc.open_file(source)  # reads the footer, which a short file lacks


def _read_autoindex(path: Path) -> None:
    try:
        _read_faiss(path)
    except Exception:
        _read_npy(path)


def _reader(path: Path) -> Callable[[Path], None] | None:
    """How to read the index file at `path`, by its name; None for a kind not checked."""
    if path.suffix == ".sidx":
        return _read_arrow_file
    kind = path.stem.rpartition(".")[2]
    if kind in ("flat", "brute_force"):
        return _read_npy
    if kind in _FAISS:
        return _read_faiss
    if kind == "autoindex":
        return _read_autoindex
    return None


def unreadable_index_files(data_dir: Path) -> list[Path]:
    """Index files under `data_dir` that do not read back."""
    broken = []
    for path in sorted(data_dir.glob("collections/*/partitions/*/indexes/*")):
        read = _reader(path)
        if read is None or not path.is_file():
            continue
        try:
            read(path)
        except Exception as exc:
            log.warning("milvus.index_unreadable", path=str(path), error=f"{exc}"[:200])
            broken.append(path)
    return broken


def repair(data_dir: Path) -> list[Path]:
    """Remove the index files that do not read back; Milvus Lite builds them again."""
    broken = unreadable_index_files(data_dir)
    for path in broken:
        path.unlink()
        log.warning("milvus.index_removed", path=str(path))
    return broken


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="weir_deploy.milvus_server")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", required=True, type=int)
    args = parser.parse_args(argv)
    mark = args.data_dir / CLEAN_STOP
    if mark.exists():
        mark.unlink()
    else:
        repair(args.data_dir)
    signal.signal(signal.SIGTERM, _interrupt)
    from milvus_lite.adapter.grpc.server import run_server  # noqa: PLC0415

    run_server(str(args.data_dir), host=args.host, port=args.port)  # returns once closed
    mark.touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
