"""The vector index protocol: rows of one collection (a string key, scalar fields, one unit
vector), nearest-neighbour search by cosine filtered on the scalar fields.

An index holds vectors of one dimension, the one it was made for: a vector of another size
is refused, loudly (``ValueError``). Engine failures raise :class:`VectorIndexError`.
Adapters: :class:`~weir_common.search.inprocess_vectors.InMemoryVectorIndex` (in-process) and
:class:`~weir_common.search.milvus.MilvusVectorIndex` (Milvus, Milvus Lite).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import structlog

log = structlog.get_logger(__name__)

Scalar = str | int
#: A filter: each field equals its value, or (a list) one of its values; all must hold.
Where = Mapping[str, Scalar | Sequence[str]]


class VectorIndexError(RuntimeError):
    """The engine could not be reached or refused the operation; retrying may succeed."""


@dataclass(frozen=True)
class VectorField:
    """A scalar field: a string of at most `max_length` UTF-8 bytes, or an integer.

    `truncate`: cut longer strings (a text kept for display) instead of refusing the row.
    `indexed`: filters name it often; engines with scalar indexes keep one on it.
    """

    name: str
    max_length: int | None = 1024  # None: a 64-bit integer
    truncate: bool = False
    indexed: bool = False


@dataclass(frozen=True)
class VectorSchema:
    """The shape of one collection's rows."""

    fields: tuple[VectorField, ...] = ()
    primary: str = "id"
    primary_max_length: int = 128
    index: Literal["FLAT", "HNSW"] = "FLAT"
    #: COSINE, or IP over vectors the adapter scales to unit length: the same similarity,
    #: and Milvus Lite's exact search is ~40% faster with it (10k rows: 10 vs 17 ms).
    metric: Literal["COSINE", "IP"] = "COSINE"
    #: A string field whose value picks one of `partitions` partitions: the rows with one
    #: value live in one partition, and a search, query or delete whose filter names one
    #: value of the field reads only that partition. A row's value must not change under its
    #: key. None: one partition. (A Milvus Lite search costs time for every row it may
    #: consider: a user's among 30k rows of others, 37 ms unpartitioned, 3.8 ms in 16.)
    partition_by: str | None = None
    partitions: int = 16

    def field_names(self) -> list[str]:
        """The scalar fields' names, in schema order."""
        return [f.name for f in self.fields]


@dataclass(frozen=True)
class VectorRow:
    """One stored vector with its key and scalar fields."""

    id: str
    vector: Sequence[float]
    fields: Mapping[str, Scalar] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorMatch:
    """A search result: the row's key, its cosine similarity and the fields asked for."""

    id: str
    score: float
    fields: dict[str, Scalar] = field(default_factory=dict)


def check_dimension(expected: int, vector: Sequence[float]) -> None:
    """Raise `ValueError` when `vector` is not of the index's dimension."""
    if len(vector) != expected:
        raise ValueError(f"a vector of dimension {len(vector)} for an index of {expected}")


def fit_fields(schema: VectorSchema, fields: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """`fields` with the strings of `truncate` fields cut to their byte limit (at a
    character boundary)."""
    out = dict(fields)
    for f in schema.fields:
        value = out.get(f.name)
        if f.truncate and f.max_length is not None and isinstance(value, str):
            raw = value.encode()
            if len(raw) > f.max_length:
                log.warning("vectors.text_truncated", field=f.name, bytes=len(raw))
                out[f.name] = raw[: f.max_length].decode(errors="ignore")
    return out


def matches(fields: Mapping[str, Scalar], where: Where) -> bool:
    """True when a row's `fields` satisfy `where` (for in-process adapters)."""
    for name, wanted in where.items():
        value = fields.get(name)
        if isinstance(wanted, str | int):
            if value != wanted:
                return False
        elif value not in wanted:
            return False
    return True


class VectorIndex(Protocol):
    """Nearest-neighbour search over the vectors of one collection."""

    dimension: int
    schema: VectorSchema

    async def open(self) -> None:
        """Connect; create the collection if missing, load it if it exists (its rows are
        searchable right away, also after the engine restarted)."""
        ...

    async def close(self) -> None:
        """Release connections (after any write in flight)."""
        ...

    async def reset(self) -> None:
        """Delete every row (before a rebuild from the source of truth)."""
        ...

    async def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Insert or replace rows by key; seen by the very next search."""
        ...

    async def delete(self, where: Where, ids: Sequence[str] | None = None) -> None:
        """Delete the rows matching `where` (and, when given, with these keys). An empty
        `where` without `ids` is refused: :meth:`reset` empties the index."""
        ...

    async def query(self, where: Where, fields: Sequence[str] = ()) -> list[VectorMatch]:
        """Every row matching `where` (score 0), with `fields`; in no particular order."""
        ...

    async def search(
        self, vector: Sequence[float], k: int, where: Where, fields: Sequence[str] = ()
    ) -> list[VectorMatch]:
        """The `k` rows matching `where` most similar to `vector`, best first."""
        ...

    async def flush(self) -> None:
        """Make what was written durable and fast to search (a no-op where nothing is
        buffered)."""
        ...
