"""The vector index behind long-term memory: records of users on a shared vector index
(:mod:`weir_common.search`: in this process, or Milvus).

Every record belongs to one user and every search names that user: isolation is part of the
interface, not a filter a caller might forget. `kind` separates semantic and episodic
memories and chats (seed 001). Memories and chats are kept on two shelves, each its own
engine index: a Milvus Lite search costs time for every row of its collection, whatever the
filter keeps, and the chats (one per turn) soon outnumber the memories that every turn and
every store search. Within a shelf, each user's rows live in one of 16 partitions and a
search reads only the user's, so other users' rows cost a sixteenth (see `SCHEMA`). The
index is opened for one dimension, and its Milvus collections are named after it
(``<prefix>_<layout>_<dimension>_<shelf>``), so vectors of another embedder never meet; a
vector of another size is refused, loudly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Literal

from weir_common.search import vectors
from weir_common.search.inprocess_vectors import InMemoryVectorIndex
from weir_common.search.milvus import MilvusVectorIndex
from weir_common.search.vectors import VectorField, VectorRow, VectorSchema, Where

from ..repository import StoreError

Kind = Literal["semantic", "episodic", "chat"]
MEMORY_KINDS: tuple[Kind, ...] = ("semantic", "episodic")
#: The shelves and the kinds each keeps. A Milvus Lite search of a user's 100 rows took
#: 3.4 ms among 1,000 rows of others, 6.7 ms among 10,000 and 16.7 ms among 30,000.
SHELVES: dict[str, tuple[Kind, ...]] = {"memories": MEMORY_KINDS, "chats": ("chat",)}
_SHELF_OF: dict[Kind, str] = {kind: shelf for shelf, kinds in SHELVES.items() for kind in kinds}
#: The rows of memory's collections (the field names of collections made before this).
#: IP over unit vectors: cosine scores, and the exact (FLAT) search of a user's rows ~40%
#: faster on Milvus Lite than with COSINE (issue 16's store-latency growth). Each user's rows
#: in one of 16 partitions: a search reads a sixteenth of the other users' rows (a user's
#: search among 30k rows of others: 37 → 3.8 ms on Milvus Lite). The fields every search
#: filters on are indexed (INVERTED): one user's search of 10k rows, 9.7 → 7.8 ms.
SCHEMA = VectorSchema(
    fields=(
        VectorField("user_id", 256, indexed=True),
        VectorField("kind", 16, indexed=True),
        VectorField("session_id", 256, indexed=True),
    ),
    metric="IP",
    partition_by="user_id",
    partitions=16,
)
#: Each shelf's vector index. A memories search is approximate (HNSW; Milvus Lite filters a
#: user's rows inside the graph walk): its exact search read every vector of the user's
#: partition, and one user's store (a search for a near duplicate, then the write) went
#: 5.0 → 14.8 ms from 100 to 10k memories (`bench/memory_store_latency.py`, issue 16); the
#: chats, written every turn, stay exact (an index is built for each flushed segment).
SHELF_INDEX: dict[str, Literal["FLAT", "HNSW"]] = {"memories": "HNSW", "chats": "FLAT"}


class VectorIndexError(StoreError):
    """The vector engine could not be reached or refused the operation; retrying may
    succeed (transient for the harness, as every `StoreError`)."""


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


_SearchKey = tuple[str, tuple[str, ...], str | None, tuple[float, ...]]


@dataclass
class _Shared:
    """The searches of one `sharing_searches` block, by what they asked: (limit, hits)."""

    at_least: int
    found: dict[_SearchKey, tuple[int, list[VectorHit]]]


_SHARED: ContextVar[_Shared | None] = ContextVar("memory_shared_searches", default=None)


@contextmanager
def sharing_searches(at_least: int = 0) -> Iterator[None]:
    """Within the block, a search asked again (same user, kinds, session and vector) for no
    more hits than the first got is answered from the first one's hits; each search asks the
    engine for `at_least` hits (the most any caller in the block will want), and returns
    what its caller asked for. A turn's context asks for the chats nearest the question
    twice, for the turn log's candidates and for the recall of past sessions: one engine
    search instead of two. Nothing in the block may write vectors it then expects to find."""
    token = _SHARED.set(_Shared(at_least, {}))
    try:
        yield
    finally:
        _SHARED.reset(token)


@contextmanager
def _engine_errors() -> Iterator[None]:
    try:
        yield
    except vectors.VectorIndexError as exc:
        raise VectorIndexError(str(exc)) from exc


class UserVectorIndex:
    """Users' vector records on engine indexes made, at `open`, by `make(dimension, shelf)`."""

    def __init__(self, make: Callable[[int, str], vectors.VectorIndex]) -> None:
        self._make = make
        self._engines: dict[str, vectors.VectorIndex] = {}

    @classmethod
    def in_process(cls) -> UserVectorIndex:
        """Vectors in this process: the zero-setup index (rebuilt from PostgreSQL at start)."""
        return cls(lambda dimension, _: InMemoryVectorIndex(dimension, SCHEMA))

    @classmethod
    def milvus(
        cls, uri: str, prefix: str = "weir_memory", flush_every: int = 64
    ) -> UserVectorIndex:
        """Milvus at `uri`, one collection per metric, partitioning, scalar indexing, dimension
        and shelf (one of another metric or layout, e.g. one a former version made, is left
        alone: the new ones are built from PostgreSQL at the first start); a background
        flush after every `flush_every` written rows keeps searches off the slow unflushed
        scan. Over 6000 turns of 200 users (`bench/milvus_turn_cost.py`: each turn searches
        twice and writes its chat), Milvus Lite spent 5.6-8.0 ms of CPU per turn flushing
        every 64 rows, 7.8-13.8 ms every 256, 27-29 ms every 1024 (one collection with
        sessions' rows too: 8.3-14.8 ms every 64)."""
        safe = re.sub(r"\W", "_", prefix)
        indexed = "i" if any(f.indexed for f in SCHEMA.fields) else ""
        name = f"{safe}_{SCHEMA.metric.lower()}_u{SCHEMA.partitions}{indexed}"

        def make(dimension: int, shelf: str) -> vectors.VectorIndex:
            schema = replace(SCHEMA, index=SHELF_INDEX[shelf])
            hnsw = "h" if schema.index == "HNSW" else ""
            return MilvusVectorIndex(uri, f"{name}{hnsw}_{dimension}_{shelf}", dimension,
                                     schema, timeout_s=10.0, flush_every=flush_every)  # fmt: skip

        return cls(make)

    def engine(self, kind: Kind) -> vectors.VectorIndex:
        """The open engine index of the shelf that keeps `kind`."""
        return self._opened()[_SHELF_OF[kind]]

    @property
    def durable(self) -> str | None:
        """The engine collections' names when they outlive this process, else None."""
        names = [e.collection for e in self._engines.values() if isinstance(e, MilvusVectorIndex)]
        return "+".join(names) if names else None

    async def open(self, dimension: int) -> None:
        """Connect; create each shelf's collection for this dimension, or load it."""
        engines = {shelf: self._make(dimension, shelf) for shelf in SHELVES}
        with _engine_errors():
            for engine in engines.values():
                await engine.open()
        self._engines = engines

    async def close(self) -> None:
        """Release connections (after a flush in flight)."""
        engines, self._engines = self._engines, {}
        with _engine_errors():
            for engine in engines.values():
                await engine.close()

    async def reset(self) -> None:
        """Delete every record of every user (before a rebuild from PostgreSQL)."""
        with _engine_errors():
            for engine in self._opened().values():
                await engine.reset()

    async def flush(self) -> None:
        """Seal what was written, so searches use the index instead of a scan."""
        with _engine_errors():
            for engine in self._opened().values():
                await engine.flush()

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id."""
        engines = self._opened()
        by_shelf: dict[str, list[VectorRow]] = {}
        for r in records:
            row = VectorRow(r.id, r.vector, {"user_id": r.user_id, "kind": r.kind,
                                             "session_id": r.session_id})  # fmt: skip
            by_shelf.setdefault(_SHELF_OF[r.kind], []).append(row)
        with _engine_errors():
            for shelf, rows in by_shelf.items():
                await engines[shelf].upsert(rows)

    async def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete these records of this user (unknown ids, others' ids are ignored)."""
        with _engine_errors():
            for engine in self._opened().values():
                await engine.delete({"user_id": user_id}, ids)

    async def delete_user(self, user_id: str) -> None:
        """Delete every record of a user."""
        with _engine_errors():
            for engine in self._opened().values():
                await engine.delete({"user_id": user_id})

    def _opened(self) -> dict[str, vectors.VectorIndex]:
        if not self._engines:
            raise RuntimeError("UserVectorIndex used before open()")
        return self._engines

    async def search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None = None,
    ) -> list[VectorHit]:
        """The user's `limit` nearest records of these kinds (optionally of one session)."""
        shared = _SHARED.get()
        if shared is None:
            return await self._search(user_id, kinds, vector, limit, session_id)
        key: _SearchKey = (user_id, tuple(kinds), session_id, tuple(vector))
        done = shared.found.get(key)
        if done is None or done[0] < limit:
            asked = max(limit, shared.at_least)
            done = shared.found[key] = (
                asked,
                await self._search(user_id, kinds, vector, asked, session_id),
            )
        return done[1][:limit]

    async def _search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None,
    ) -> list[VectorHit]:
        """Each shelf keeping one of `kinds` (none: every kind) searched, the hits merged
        nearest first."""
        engines = self._opened()
        kinds = kinds or list(_SHELF_OF)
        hits: list[VectorHit] = []
        for shelf in dict.fromkeys(_SHELF_OF[k] for k in kinds):
            where: Where = {"user_id": user_id, "kind": [k for k in kinds if _SHELF_OF[k] == shelf]}
            if session_id is not None:
                where = {**where, "session_id": session_id}
            with _engine_errors():
                found = await engines[shelf].search(vector, limit, where, ["session_id"])
            hits += [VectorHit(m.id, str(m.fields["session_id"]), m.score) for m in found]
        return sorted(hits, key=lambda h: -h.cosine)[:limit]
