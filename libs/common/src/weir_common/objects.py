"""The object store: uploads are stored first, and events carry only a reference (`file://…`).

Content-addressed: the same bytes are stored once. A local folder is the zero-setup default;
an S3-compatible store can implement the same two methods.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse


class ObjectStore(Protocol):
    """Stores bytes and gives them back by reference."""

    def put(self, data: bytes, name: str) -> str:
        """Store `data` (its file name kept for the extension); returns its reference."""
        ...

    def get(self, ref: str) -> bytes:
        """The bytes behind a reference; `FileNotFoundError` when gone."""
        ...


class LocalObjectStore:
    """Objects as files under one folder, named by their SHA-256."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes, name: str) -> str:
        """Write once (atomically) under `<sha256><ext>`; returns a `file://` reference."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / digest[:2] / f"{digest}{Path(name).suffix.lower()}"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(path.suffix + f".{os.getpid()}.part")
            partial.write_bytes(data)
            partial.replace(path)
        return path.resolve().as_uri()

    def get(self, ref: str) -> bytes:
        """Read a `file://` reference inside this store."""
        parsed = urlparse(ref)
        if parsed.scheme != "file":
            raise ValueError(f"not a local object reference: {ref!r}")
        path = Path(unquote(parsed.path)).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"reference outside the object store: {ref!r}")
        return path.read_bytes()
