"""The vector index behind long-term memory, and its in-process adapter.

Every record belongs to one user and every search names that user: isolation is part of the
interface, not a filter a caller might forget. `kind` separates semantic and episodic
memories, chats and session summaries (seed 001) in one index. An index holds vectors of one
dimension, the one it was opened for: a vector of another size is refused, loudly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

Kind = Literal["semantic", "episodic", "chat", "session"]
MEMORY_KINDS: tuple[Kind, ...] = ("semantic", "episodic")


@dataclass(frozen=True)
class VectorRecord:
    """One vector of one user."""

    id: str
    user_id: str
    kind: Kind
    vector: list[float]
    session_id: str = ""


@dataclass(frozen=True)
class VectorHit:
    """A search result: the record id, its session and the raw cosine similarity."""

    id: str
    session_id: str
    cosine: float


def check_dimension(expected: int | None, vector: Sequence[float]) -> None:
    """Raise `ValueError` when `vector` is not of the index's dimension (None: not opened)."""
    if expected is not None and len(vector) != expected:
        raise ValueError(f"a vector of dimension {len(vector)} for an index of {expected}")


class VectorIndex(Protocol):
    """Nearest-neighbour search over unit vectors, always within one user's records."""

    async def open(self, dimension: int) -> None:
        """Connect and create what is missing for vectors of `dimension`."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def reset(self) -> None:
        """Delete every record of every user (before a rebuild from PostgreSQL)."""
        ...

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id."""
        ...

    async def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete these records of this user (unknown ids are ignored)."""
        ...

    async def delete_user(self, user_id: str) -> None:
        """Delete every record of a user."""
        ...

    async def search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None = None,
    ) -> list[VectorHit]:
        """The user's `limit` nearest records of these kinds (optionally of one session)."""
        ...


class InMemoryVectorIndex:
    """Vectors in this process: the zero-setup adapter (rebuilt from PostgreSQL at start)."""

    def __init__(self) -> None:
        self._records: dict[str, VectorRecord] = {}
        self._dimension: int | None = None

    async def open(self, dimension: int) -> None:
        """Nothing to connect; remember the dimension."""
        self._dimension = dimension

    async def close(self) -> None:
        """Nothing to release."""

    async def reset(self) -> None:
        """Forget every record."""
        self._records.clear()

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by id."""
        for record in records:
            check_dimension(self._dimension, record.vector)
        for record in records:
            self._records[record.id] = record

    async def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete the user's records with these ids."""
        for rid in ids:
            record = self._records.get(rid)
            if record is not None and record.user_id == user_id:
                del self._records[rid]

    async def delete_user(self, user_id: str) -> None:
        """Delete all of a user's records."""
        for rid in [r.id for r in self._records.values() if r.user_id == user_id]:
            del self._records[rid]

    async def search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None = None,
    ) -> list[VectorHit]:
        """Exact search by cosine (vectors are unit length)."""
        check_dimension(self._dimension, vector)
        pool = [
            r
            for r in self._records.values()
            if r.user_id == user_id
            and r.kind in kinds
            and (session_id is None or r.session_id == session_id)
        ]
        if not pool:
            return []
        scores = np.asarray([r.vector for r in pool]) @ np.asarray(vector)
        order = np.argsort(-scores)[:limit]
        return [VectorHit(pool[i].id, pool[i].session_id, float(scores[i])) for i in order]
