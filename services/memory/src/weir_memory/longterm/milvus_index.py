"""Milvus adapter of `VectorIndex` (Milvus standalone, or Milvus Lite in server mode).

pymilvus's `AsyncMilvusClient` cannot create an index on Milvus Lite (it waits through an
RPC the Lite server does not implement), so the synchronous client runs in worker threads.

Milvus searches rows not yet flushed (its growing segment) by a slow scan: on Milvus Lite,
~300 ms at 10k rows against ~17 ms once flushed (measured). So after every `flush_every`
written rows a flush runs in the background, off the write path.

Collections are created, and searched, with Strong consistency: Milvus's default (Bounded)
may serve a search from a view seconds old, and store-time dedup must see a memory written
or deleted a moment before, by this replica or another. (Milvus Lite is always strong;
Milvus standalone and distributed are not.)
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import structlog

from weir_common.engines import MILVUS_GRPC_OPTIONS, milvus_not_loaded

from ..repository import StoreError
from .index import Kind, VectorHit, VectorRecord, check_dimension

log = structlog.get_logger(__name__)
T = TypeVar("T")
CONSISTENCY = "Strong"


class VectorIndexError(StoreError):
    """Milvus could not be reached or refused the operation; retrying may succeed."""


def _quote(value: str) -> str:
    """A string literal for a Milvus boolean expression."""
    return json.dumps(value, ensure_ascii=False)


def _where(user_id: str, kinds: Sequence[Kind] | None = None, session_id: str | None = None) -> str:
    parts = [f"user_id == {_quote(user_id)}"]
    if kinds:
        parts.append(f"kind in [{', '.join(_quote(k) for k in kinds)}]")
    if session_id is not None:
        parts.append(f"session_id == {_quote(session_id)}")
    return " and ".join(parts)


class MilvusVectorIndex:
    """One collection per vector dimension, FLAT cosine index, filtered by user always."""

    def __init__(
        self,
        uri: str,
        collection_prefix: str = "weir_memory",
        timeout: float = 10.0,
        flush_every: int = 512,
    ) -> None:
        self._uri = uri
        self._prefix = re.sub(r"\W", "_", collection_prefix)
        self._timeout = timeout
        self._flush_every = flush_every
        self._unflushed = 0
        self._flushing: asyncio.Task[None] | None = None
        self._client: Any = None
        self._dimension: int | None = None
        self.collection = ""

    async def _run(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except Exception as exc:
            raise VectorIndexError(f"milvus: {type(exc).__name__}: {exc}") from exc

    async def open(self, dimension: int) -> None:
        """Connect and create the collection for this dimension if it is missing."""
        from pymilvus import MilvusClient  # noqa: PLC0415 - ~3 s import, only when used

        self.collection = f"{self._prefix}_{dimension}"
        self._dimension = dimension
        self._client = await self._run(
            # dedicated: never a connection pymilvus shares with other clients of this uri
            lambda: MilvusClient(
                uri=self._uri,
                timeout=self._timeout,
                grpc_options=MILVUS_GRPC_OPTIONS,
                dedicated=True,
            )
        )
        await self._ensure()
        await self._background_flush()  # rows a previous process left; best effort
        log.info("memory.vectors.opened", uri=self._uri, collection=self.collection)

    async def _ensure(self) -> None:
        """Create the collection if it is missing, then load it: a collection made before a
        Milvus restart comes back released, and searching it fails until it is loaded."""
        if not await self._run(lambda: self._client.has_collection(self.collection)):
            try:
                await self._run(self._create)
            except VectorIndexError:  # another replica created it at the same moment
                if not await self._run(lambda: self._client.has_collection(self.collection)):
                    raise
        await self._load()

    async def _load(self) -> None:
        await self._run(lambda: self._client.load_collection(self.collection))
        log.info("memory.vectors.loaded", collection=self.collection)

    async def _loaded(self, fn: Callable[[], T]) -> T:
        """Run `fn`; when Milvus restarted under us and released the collection, load it
        once and run `fn` again."""
        try:
            return await self._run(fn)
        except VectorIndexError as exc:
            if not milvus_not_loaded(exc):
                raise
            log.warning("memory.vectors.reloading", collection=self.collection, error=str(exc))
            await self._load()
            return await self._run(fn)

    async def reset(self) -> None:
        """Drop the collection and create it empty."""
        await self._run(lambda: self._client.drop_collection(self.collection))
        self._unflushed = 0
        await self._ensure()

    def _create(self) -> None:
        from pymilvus import DataType, MilvusClient  # noqa: PLC0415

        dimension = self._dimension
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=128)
        schema.add_field("user_id", DataType.VARCHAR, max_length=256)
        schema.add_field("kind", DataType.VARCHAR, max_length=16)
        schema.add_field("session_id", DataType.VARCHAR, max_length=256)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        params = MilvusClient.prepare_index_params()
        params.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
        self._client.create_collection(
            self.collection, schema=schema, index_params=params, consistency_level=CONSISTENCY
        )

    async def flush(self) -> None:
        """Seal what was written, so searches use the index instead of a scan."""
        self._unflushed = 0
        await self._run(lambda: self._client.flush(self.collection))

    def _wrote(self, rows: int) -> None:
        self._unflushed += rows
        if self._unflushed >= self._flush_every and (
            self._flushing is None or self._flushing.done()
        ):
            self._flushing = asyncio.create_task(self._background_flush())

    async def _background_flush(self) -> None:
        try:
            await self.flush()
        except VectorIndexError as exc:  # the next writes try again
            log.warning("memory.vectors.flush_failed", error=str(exc))

    async def close(self) -> None:
        """Wait for a running flush, then close the client."""
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        if self._client is not None:
            client, self._client = self._client, None
            await asyncio.to_thread(client.close)

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id."""
        if not records:
            return
        for record in records:
            check_dimension(self._dimension, record.vector)
        rows = [
            {"id": r.id, "user_id": r.user_id, "kind": r.kind, "session_id": r.session_id,
             "vector": r.vector}
            for r in records
        ]  # fmt: skip
        await self._loaded(lambda: self._client.upsert(self.collection, rows))
        self._wrote(len(rows))

    async def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete these ids, only among the user's records."""
        if not ids:
            return
        expr = f"{_where(user_id)} and id in [{', '.join(_quote(i) for i in ids)}]"
        await self._loaded(lambda: self._client.delete(self.collection, filter=expr))

    async def delete_user(self, user_id: str) -> None:
        """Delete all records of a user."""
        await self._loaded(lambda: self._client.delete(self.collection, filter=_where(user_id)))

    async def search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None = None,
    ) -> list[VectorHit]:
        """The user's nearest records; Milvus's COSINE distance is the similarity."""
        check_dimension(self._dimension, vector)
        expr = _where(user_id, kinds, session_id)
        result = await self._loaded(
            lambda: self._client.search(
                self.collection,
                data=[list(vector)],
                filter=expr,
                limit=limit,
                output_fields=["session_id"],
                consistency_level=CONSISTENCY,  # also for collections made before it was set
            )
        )
        hits = result[0] if result else []
        return [
            VectorHit(str(h["id"]), str(h["entity"].get("session_id", "")), float(h["distance"]))
            for h in hits
        ]
