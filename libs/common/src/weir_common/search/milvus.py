"""Milvus (standalone, or Milvus Lite in server mode): the engine
:class:`~weir_common.search.vectors.VectorIndex` adapter.

pymilvus's ``AsyncMilvusClient`` cannot create an index on Milvus Lite (it waits through an
RPC the Lite server does not implement), so the synchronous client runs in worker threads.

Opening creates the collection when it is missing and *loads* it in every case: a collection
made before a Milvus restart (or by a previous process) comes back released, and searching it
fails until it is loaded. An operation that still meets a released collection (Milvus
restarted under a running process) loads it once and runs again.

Collections are created, and searched, with Strong consistency: Milvus's default (Bounded)
may serve a search from a view seconds old, and a dedup or a forget must see a row written
or deleted a moment before, by this process or another.

Milvus searches rows not yet flushed (its growing segment) by a slow scan: on Milvus Lite,
~300 ms at 10k rows against ~17 ms once flushed (measured). With `flush_every`, a flush runs
in the background after that many written rows, off the write path.

With a schema's `partition_by`, the collection is made with that many partitions and every
row goes to the one its field's value hashes to (BLAKE2b, stable across processes); a
search, query or delete naming one value reads only that partition. A collection that was
made without them is used as it is, unpruned (rows of an older layout are never missed).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import structlog

from weir_common.engines import MILVUS_GRPC_OPTIONS, milvus_not_loaded
from weir_common.search.vectors import (
    Scalar,
    VectorIndexError,
    VectorMatch,
    VectorRow,
    VectorSchema,
    Where,
    check_dimension,
    fit_fields,
)

log = structlog.get_logger(__name__)
T = TypeVar("T")
CONSISTENCY = "Strong"
HNSW_PARAMS = {"M": 16, "efConstruction": 200}


def quote(value: str) -> str:
    """A string literal for a Milvus boolean expression (quotes and backslashes escaped)."""
    return json.dumps(value, ensure_ascii=False)


def _literal(value: Scalar) -> str:
    return quote(value) if isinstance(value, str) else str(int(value))


def partition_of(value: str, partitions: int) -> str:
    """The partition of rows whose partition field holds `value`: ``p0`` .. ``p<n-1>``."""
    digest = hashlib.blake2b(value.encode(), digest_size=8).digest()
    return f"p{int.from_bytes(digest, 'big') % partitions}"


def milvus_filter(where: Where, primary: str = "id", ids: Sequence[str] | None = None) -> str:
    """``where`` (and ``ids``) as a Milvus boolean expression, every value quoted."""
    parts = []
    for name, wanted in where.items():
        if isinstance(wanted, str | int):
            parts.append(f"{name} == {_literal(wanted)}")
        else:
            parts.append(f"{name} in [{', '.join(quote(v) for v in wanted)}]")
    if ids is not None:
        parts.append(f"{primary} in [{', '.join(quote(i) for i in ids)}]")
    return " and ".join(parts)


class MilvusVectorIndex:
    """One Milvus collection (cosine, or IP over unit vectors; FLAT or HNSW per the schema;
    an INVERTED index on each `indexed` field, made with the collection)."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dimension: int,
        schema: VectorSchema | None = None,
        *,
        timeout_s: float = 30.0,
        ef: int = 128,
        flush_every: int | None = None,
    ) -> None:
        self.uri = uri
        self.collection = collection
        self.dimension = dimension
        self.schema = schema or VectorSchema()
        self.timeout_s = timeout_s
        self.ef = ef
        self._flush_every = flush_every
        self._unflushed = 0
        self._flushing: asyncio.Task[None] | None = None
        self._client: Any = None
        self._partitioned = False  # the collection has the schema's partitions

    async def _run(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except Exception as exc:
            raise VectorIndexError(f"milvus: {type(exc).__name__}: {exc}") from exc

    async def _loaded(self, fn: Callable[[], T]) -> T:
        """Run `fn`; when Milvus restarted under us and released the collection, load it
        once and run `fn` again."""
        try:
            return await self._run(fn)
        except VectorIndexError as exc:
            if not milvus_not_loaded(exc):
                raise
            log.warning("vectors.reloading", collection=self.collection, error=str(exc))
            await self._load()
            return await self._run(fn)

    def _db(self) -> Any:
        if self._client is None:
            raise VectorIndexError(f"milvus index {self.collection} used before open()")
        return self._client

    async def open(self) -> None:
        """Connect, create the collection if it is missing, load it."""
        from pymilvus import MilvusClient  # noqa: PLC0415 - ~3 s import, only when used

        self._client = await self._run(
            # dedicated: never a connection pymilvus shares with other clients of this uri
            lambda: MilvusClient(uri=self.uri, timeout=self.timeout_s,
                                 grpc_options=MILVUS_GRPC_OPTIONS, dedicated=True)
        )  # fmt: skip
        await self._ensure()
        await self._background_flush()  # rows a previous process left; best effort
        log.info("vectors.opened", engine="milvus", uri=self.uri, collection=self.collection)

    async def _ensure(self) -> None:
        if not await self._run(lambda: self._db().has_collection(self.collection)):
            try:
                await self._run(self._create)
            except VectorIndexError:  # another process created it at the same moment
                if not await self._run(lambda: self._db().has_collection(self.collection)):
                    raise
        await self._load()
        await self._find_partitions()

    async def _find_partitions(self) -> None:
        """Use the schema's partitions: those missing are added (another process made the
        collection a moment ago and has not yet), unless the collection holds rows outside
        them (made by an older layout: then it is searched whole)."""
        self._partitioned = False
        if self.schema.partition_by is None:
            return
        names = set(await self._run(lambda: self._db().list_partitions(self.collection)))
        missing = [p for p in self._partition_names() if p not in names]
        if missing:
            if await self._run(self._default_has_rows):
                log.warning("vectors.unpartitioned", collection=self.collection,
                            partition_by=self.schema.partition_by)  # fmt: skip
                return
            await self._run(lambda: self._add_partitions(missing))
            await self._load()
        self._partitioned = True

    def _default_has_rows(self) -> bool:
        rows = self._db().query(self.collection, filter="", output_fields=[self.schema.primary],
                                partition_names=["_default"], limit=1,
                                consistency_level=CONSISTENCY)  # fmt: skip
        return bool(rows)

    def _add_partitions(self, names: Sequence[str]) -> None:
        for name in names:
            try:
                self._db().create_partition(self.collection, name)
            except Exception:  # another process added it at the same moment
                if not self._db().has_partition(self.collection, name):
                    raise

    def _partition_names(self) -> list[str]:
        return [f"p{n}" for n in range(self.schema.partitions)]

    def _partition(self, where: Where) -> str | None:
        """The one partition `where` can match, when it names one value of the partition
        field (else None: every partition)."""
        field = self.schema.partition_by
        value = where.get(field) if field is not None and self._partitioned else None
        return partition_of(value, self.schema.partitions) if isinstance(value, str) else None

    async def _load(self) -> None:
        await self._run(lambda: self._db().load_collection(self.collection))
        log.info("vectors.loaded", collection=self.collection)

    def _create(self) -> None:
        from pymilvus import DataType, MilvusClient  # noqa: PLC0415

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(self.schema.primary, DataType.VARCHAR, is_primary=True,
                         max_length=self.schema.primary_max_length)  # fmt: skip
        for f in self.schema.fields:
            if f.max_length is None:
                schema.add_field(f.name, DataType.INT64)
            else:
                schema.add_field(f.name, DataType.VARCHAR, max_length=f.max_length)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dimension)
        params = MilvusClient.prepare_index_params()
        hnsw = self.schema.index == "HNSW"
        params.add_index(field_name="vector", index_type=self.schema.index,
                         metric_type=self.schema.metric,
                         params=HNSW_PARAMS if hnsw else {})  # fmt: skip
        for f in self.schema.fields:
            if f.indexed:  # a filter on it reads the index, not every row's value
                params.add_index(field_name=f.name, index_type="INVERTED")
        self._db().create_collection(self.collection, schema=schema,
                                     consistency_level=CONSISTENCY)  # fmt: skip
        # not waited for: an empty collection's index is ready at once, and pymilvus's wait
        # sleeps 0.5 s before its first look, per index (2 s for a collection of four)
        self._db().create_index(self.collection, params, sync=False)
        log.info("vectors.collection_created", collection=self.collection,
                 dimension=self.dimension)  # fmt: skip

    async def reset(self) -> None:
        """Drop the collection and create it empty."""
        await self._run(lambda: self._db().drop_collection(self.collection))
        self._unflushed = 0
        await self._ensure()

    async def flush(self) -> None:
        """Seal what was written, so searches use the index instead of a scan."""
        self._unflushed = 0
        await self._run(lambda: self._db().flush(self.collection))

    def _wrote(self, rows: int) -> None:
        self._unflushed += rows
        if self._flush_every is None or self._unflushed < self._flush_every:
            return
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._background_flush())

    async def _background_flush(self) -> None:
        try:
            await self.flush()
        except VectorIndexError as exc:  # the next writes try again
            log.warning("vectors.flush_failed", collection=self.collection, error=str(exc))

    async def close(self) -> None:
        """Wait for a running flush, then close the client."""
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        if self._client is not None:
            client, self._client = self._client, None
            await asyncio.to_thread(client.close)

    def _row(self, row: VectorRow) -> dict[str, Any]:
        fields = fit_fields(self.schema, row.fields)
        values = {f.name: fields[f.name] for f in self.schema.fields}
        return {self.schema.primary: row.id, **values, "vector": self._vector(row.vector)}

    def _vector(self, vector: Sequence[float]) -> list[float]:
        """The vector as Milvus keeps it: scaled to unit length for IP (which then scores as
        COSINE does)."""
        values = [float(v) for v in vector]
        if self.schema.metric == "IP":
            norm = math.sqrt(sum(v * v for v in values))
            return [v / norm for v in values] if norm > 0 else values
        return values

    async def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Insert or replace rows by key."""
        if not rows:
            return
        for row in rows:
            check_dimension(self.dimension, row.vector)
        started = time.monotonic()
        data = [self._row(r) for r in rows]
        field = self.schema.partition_by
        groups: dict[str | None, list[dict[str, Any]]] = {}
        for values in data:
            part = self._partition({field: values[field]}) if field else None
            groups.setdefault(part, []).append(values)
        for part, group in groups.items():
            await self._upsert(group, part)
        self._wrote(len(data))
        log.debug("vectors.upserted", collection=self.collection, rows=len(data),
                  seconds=round(time.monotonic() - started, 3))  # fmt: skip

    async def _upsert(self, data: list[dict[str, Any]], partition: str | None) -> None:
        kwargs = {"partition_name": partition} if partition else {}
        await self._loaded(lambda: self._db().upsert(self.collection, data, **kwargs))

    async def delete(self, where: Where, ids: Sequence[str] | None = None) -> None:
        """Delete matching rows (by expression: unknown ids are ignored)."""
        if not where and ids is None:
            raise ValueError("delete without a filter: use reset()")
        if ids is not None and not ids:
            return
        expr = milvus_filter(where, self.schema.primary, ids)
        part = self._partition(where)
        kwargs = {"partition_name": part} if part else {}
        await self._loaded(lambda: self._db().delete(self.collection, filter=expr, **kwargs))

    @staticmethod
    def _match(
        key: Any, score: float, entity: dict[str, Any], fields: Sequence[str]
    ) -> VectorMatch:
        return VectorMatch(str(key), score, {name: entity[name] for name in fields})

    async def query(self, where: Where, fields: Sequence[str] = ()) -> list[VectorMatch]:
        """Every matching row, with `fields`."""
        expr = milvus_filter(where, self.schema.primary)
        out = [self.schema.primary, *fields]
        part = self._partition(where)
        rows = await self._loaded(
            lambda: self._db().query(self.collection, filter=expr, output_fields=out,
                                     partition_names=[part] if part else None,
                                     consistency_level=CONSISTENCY)
        )  # fmt: skip
        return [self._match(r[self.schema.primary], 0.0, r, fields) for r in rows]

    async def search(
        self, vector: Sequence[float], k: int, where: Where, fields: Sequence[str] = ()
    ) -> list[VectorMatch]:
        """The nearest matching rows; Milvus's score (COSINE, or IP of unit vectors) is the
        cosine similarity."""
        check_dimension(self.dimension, vector)
        if k < 1:
            return []
        params = {"params": {"ef": max(self.ef, k)}} if self.schema.index == "HNSW" else {}
        part = self._partition(where)
        result = await self._loaded(
            lambda: self._db().search(
                self.collection, data=[self._vector(vector)],
                filter=milvus_filter(where, self.schema.primary), limit=k,
                output_fields=list(fields), search_params=params,
                partition_names=[part] if part else None,
                consistency_level=CONSISTENCY,  # also for collections made before it was set
            )
        )  # fmt: skip
        hits = result[0] if result else []
        return [self._match(h.id, float(h["distance"]), h["entity"], fields) for h in hits]

    async def wait_indexed(self, timeout_s: float = 600.0) -> None:
        """Flush, then wait until every index (the vector's, and the scalar ones of
        `indexed` fields) covers every row: exact search until then, and index files still
        being written."""
        deadline = time.monotonic() + timeout_s
        await self.flush()
        while True:
            infos = await self._run(self._describe_indexes)
            if all(int(i.get("pending_index_rows", 0)) == 0 and i.get("state") == "Finished"
                   for i in infos):  # fmt: skip
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"milvus indexes of {self.collection} not built: {infos}")
            await asyncio.sleep(0.5)

    def _describe_indexes(self) -> list[dict[str, Any]]:
        db = self._db()
        return [
            db.describe_index(self.collection, name) for name in db.list_indexes(self.collection)
        ]
