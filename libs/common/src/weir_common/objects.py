"""Where uploaded files live: an object store interface and a local-folder adapter.

Files are content-addressed (SHA-256), so storing the same bytes twice is one file, and
refs are `file://` URLs. An S3-compatible adapter can implement the same protocol.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit


class ObjectNotFoundError(LookupError):
    """The ref names no stored object (or one outside this store)."""


class ObjectStore(Protocol):
    """Put, get and delete file contents by ref."""

    async def put(self, data: bytes) -> str:
        """Store bytes; returns their ref."""
        ...

    async def get(self, ref: str) -> bytes:
        """The bytes of a ref; raises ObjectNotFoundError."""
        ...

    async def delete(self, ref: str) -> bool:
        """Remove an object; False when it was not there."""
        ...


class LocalObjectStore:
    """Objects under `<root>/<first two hex digits>/<sha256>` (root: DATA_DIR/objects)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    @classmethod
    def under(cls, data_dir: Path) -> LocalObjectStore:
        """The store of a data directory (`DATA_DIR/objects`)."""
        return cls(data_dir / "objects")

    def path_of(self, ref: str) -> Path:
        """The file of a `file://` ref; refs outside the root are refused."""
        parts = urlsplit(ref)
        if parts.scheme != "file":
            raise ObjectNotFoundError(f"not a file:// ref: {ref}")
        path = Path(unquote(parts.path)).resolve()
        if not path.is_relative_to(self.root):
            raise ObjectNotFoundError(f"ref outside the object store: {ref}")
        return path

    def _put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / digest[:2] / digest
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)  # atomic: readers never see half a file
        return path.as_uri()

    def _get(self, ref: str) -> bytes:
        try:
            return self.path_of(ref).read_bytes()
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise ObjectNotFoundError(f"no stored object at {ref}") from exc

    def _delete(self, ref: str) -> bool:
        try:
            self.path_of(ref).unlink()
        except FileNotFoundError:
            return False
        return True

    async def put(self, data: bytes) -> str:
        """Store bytes (once per content); returns the `file://` ref."""
        return await asyncio.to_thread(self._put, data)

    async def get(self, ref: str) -> bytes:
        """The stored bytes."""
        return await asyncio.to_thread(self._get, ref)

    async def delete(self, ref: str) -> bool:
        """Remove the object."""
        return await asyncio.to_thread(self._delete, ref)
