"""Dense vectors of chunks: the :class:`DenseIndex` interface and its one implementation,
chunks as rows of a shared :class:`~weir_common.search.vectors.VectorIndex` (Milvus).

One collection holds every weir collection; searches filter on the ``collection`` and
``owner`` fields (``owner == ""`` is shared). HNSW with cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import structlog

from weir_common.search.documents import Chunk, Hit, Scope
from weir_common.search.milvus import MilvusVectorIndex
from weir_common.search.records import RECORD_FIELDS, from_record, to_record, visible_owners
from weir_common.search.vectors import VectorField, VectorIndex, VectorRow, VectorSchema, Where

log = structlog.get_logger(__name__)

MAX_VARCHAR_BYTES = 65535
#: The rows of the chunk collection (the field names of collections made before this).
CHUNK_SCHEMA = VectorSchema(
    primary="chunk_id",
    primary_max_length=512,
    fields=(
        *(VectorField(n) for n in ("document_id", "source", "locator", "collection", "owner")),
        *(
            VectorField(n, MAX_VARCHAR_BYTES, truncate=True)
            for n in ("semantic_text", "raw_content", "metadata")
        ),
        VectorField("chunk_index", None),
    ),
    index="HNSW",
)
_FIELDS = [name for name in RECORD_FIELDS if name != "chunk_id"]


class DenseIndex(Protocol):
    """Vectors of chunks (Milvus)."""

    async def open(self) -> None:
        """Connect and create the collection/index if missing."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        """Store chunks with their (normalized) vectors, replacing same ids."""
        ...

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Remove every chunk of a document except `keep` (its chunks just written, so a
        replacement never leaves the document without chunks); returns how many."""
        ...

    async def search(self, vector: Sequence[float], k: int, scope: Scope) -> list[Hit]:
        """The k nearest chunks visible in `scope`, best first."""
        ...

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        """Every chunk of a document, in document order (to show what was indexed)."""
        ...


def scope_where(scope: Scope) -> Where:
    """The rows a search in `scope` may see: its collection, shared or the user's own."""
    return {"collection": scope.collection, "owner": visible_owners(scope)}


class DenseChunkIndex:
    """:class:`DenseIndex` over a vector index of :data:`CHUNK_SCHEMA` rows."""

    def __init__(self, vectors: VectorIndex) -> None:
        self.vectors = vectors

    async def open(self) -> None:
        """Open the vector index (its collection is created or loaded)."""
        await self.vectors.open()

    async def close(self) -> None:
        """Close the vector index."""
        await self.vectors.close()

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        """Store chunks with their vectors, replacing rows with the same ``chunk_id``."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        rows = [
            VectorRow(chunk.chunk_id, vector, to_record(chunk))
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        await self.vectors.upsert(rows)

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Remove every chunk of the document except `keep`; returns how many were removed."""
        found = await self.vectors.query({"document_id": document_id})
        kept = {c.chunk_id for c in keep}
        ids = [m.id for m in found if m.id not in kept]
        if ids:
            await self.vectors.delete({}, ids)
        log.info("dense.deleted", document_id=document_id, chunks=len(ids))
        return len(ids)

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        """Every chunk of a document, in document order."""
        rows = await self.vectors.query({"document_id": document_id}, _FIELDS)
        chunks = (from_record({**m.fields, "chunk_id": m.id}) for m in rows)
        return sorted(chunks, key=lambda c: c.chunk_index)

    async def search(self, vector: Sequence[float], k: int, scope: Scope) -> list[Hit]:
        """The k most similar chunks (cosine, higher is better) visible in ``scope``."""
        found = await self.vectors.search(vector, k, scope_where(scope), _FIELDS)
        return [Hit(from_record({**m.fields, "chunk_id": m.id}), m.score) for m in found]

    async def flush(self) -> None:
        """Seal buffered rows (call after a bulk load: unsealed rows are scanned)."""
        await self.vectors.flush()

    async def wait_indexed(self, timeout_s: float = 600.0) -> None:
        """Flush, then wait until the engine's index covers every row."""
        if isinstance(self.vectors, MilvusVectorIndex):
            await self.vectors.wait_indexed(timeout_s)
        else:
            await self.vectors.flush()


class MilvusDenseIndex(DenseChunkIndex):
    """:class:`DenseChunkIndex` on Milvus at `uri`, in `collection`."""

    def __init__(
        self,
        uri: str,
        dimension: int,
        *,
        collection: str = "weir_chunks",
        ef: int = 128,
        timeout_s: float = 30.0,
    ) -> None:
        super().__init__(
            MilvusVectorIndex(uri, collection, dimension, CHUNK_SCHEMA, ef=ef, timeout_s=timeout_s)
        )
