"""The document registry in PostgreSQL (tables `rag_documents`, `rag_forgotten`; asyncpg)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import asyncpg

from weir_common.migrations import migrate_package
from weir_common.pg import open_pool
from weir_rag.ingest.registry import (
    Decision,
    DocumentInfo,
    DocumentRecord,
    decide,
)

# Column names are constants of this module, never input: S608 does not apply.
_COLUMNS = (
    "document_id, source, collection, owner, content_hash, chunk_count, status, error,"
    " created_at, updated_at, object_ref"
)


def _record(row: asyncpg.Record) -> DocumentRecord:
    return DocumentRecord(**dict(row))


class PostgresRegistry:
    """A :class:`~weir_rag.ingest.registry.DocumentRegistry` over a connection pool."""

    def __init__(self, dsn: str, min_size: int = 1, max_size: int = 4) -> None:
        self._dsn = dsn
        self._sizes = (min_size, max_size)
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        """The open pool (after :meth:`open`)."""
        if self._pool is None:
            raise RuntimeError("PostgresRegistry is not open")
        return self._pool

    async def open(self) -> None:
        """Connect and migrate the table to the latest version (`migrations/`)."""
        self._pool = await open_pool(self._dsn, min_size=self._sizes[0], max_size=self._sizes[1])
        await migrate_package(self.pool, "rag", "weir_rag.ingest")

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def decide(self, info: DocumentInfo, force: bool = False) -> Decision:
        """New, unchanged or changed (see :func:`~weir_rag.ingest.registry.decide`)."""
        return decide(await self.get(info.document_id), info.content_hash, force)

    async def mark_ready(self, info: DocumentInfo, chunk_count: int) -> DocumentRecord:
        """Upsert as ready with the new hash and chunk count."""
        row = await self.pool.fetchrow(
            f"INSERT INTO rag_documents ({_COLUMNS})"  # noqa: S608
            " VALUES ($1, $2, $3, $4, $5, $6, 'ready', NULL, now(), now(), $7)"
            " ON CONFLICT (document_id) DO UPDATE SET source = $2, collection = $3, owner = $4,"
            " content_hash = $5, chunk_count = $6, status = 'ready', error = NULL,"
            f" updated_at = now(), object_ref = $7 RETURNING {_COLUMNS}",
            info.document_id, info.source, info.collection, info.owner, info.content_hash,
            chunk_count, info.object_ref,
        )  # fmt: skip
        return _record(row)

    async def mark_failed(self, info: DocumentInfo, reason: str) -> DocumentRecord:
        """Upsert as failed; an existing row keeps its hash and chunk count."""
        row = await self.pool.fetchrow(
            f"INSERT INTO rag_documents ({_COLUMNS})"  # noqa: S608
            " VALUES ($1, $2, $3, $4, $5, 0, 'failed', $6, now(), now(), $7)"
            " ON CONFLICT (document_id) DO UPDATE SET status = 'failed', error = $6,"
            f" updated_at = now() RETURNING {_COLUMNS}",
            info.document_id, info.source, info.collection, info.owner, info.content_hash,
            reason, info.object_ref,
        )  # fmt: skip
        return _record(row)

    async def get(self, document_id: str) -> DocumentRecord | None:
        """One record."""
        row = await self.pool.fetchrow(
            f"SELECT {_COLUMNS} FROM rag_documents WHERE document_id = $1",  # noqa: S608
            document_id,
        )
        return _record(row) if row else None

    async def list(
        self, collection: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[DocumentRecord]:
        """Keyset paging by document_id, optionally within one collection."""
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS} FROM rag_documents"  # noqa: S608
            " WHERE ($1::text IS NULL OR collection = $1)"
            " AND ($2::text IS NULL OR document_id > $2)"
            " ORDER BY document_id LIMIT $3",
            collection, after, limit,
        )  # fmt: skip
        return [_record(r) for r in rows]

    async def delete(self, document_id: str) -> bool:
        """Remove a record."""
        status = await self.pool.execute(
            "DELETE FROM rag_documents WHERE document_id = $1", document_id
        )
        return bool(status.endswith(" 1"))

    async def any_searchable(self, collection: str, user_id: str | None) -> bool:
        """One indexed lookup: a visible document of the collection with chunks."""
        found = await self.pool.fetchval(
            "SELECT 1 FROM rag_documents WHERE collection = $1 AND chunk_count > 0"
            " AND (owner IS NULL OR owner = $2) LIMIT 1",
            collection, user_id,
        )  # fmt: skip
        return found is not None

    async def owned_by(self, owner: str) -> Sequence[DocumentRecord]:
        """The owner's records, by document_id."""
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS} FROM rag_documents"  # noqa: S608
            " WHERE owner = $1 ORDER BY document_id",
            owner,
        )
        return [_record(r) for r in rows]

    async def refs_in_use(self, refs: Sequence[str], excluding: Sequence[str]) -> set[str]:
        """Refs used by a record not in `excluding`."""
        rows = await self.pool.fetch(
            "SELECT DISTINCT object_ref FROM rag_documents"
            " WHERE object_ref = ANY($1::text[]) AND NOT document_id = ANY($2::text[])",
            list(refs), list(excluding),
        )  # fmt: skip
        return {r["object_ref"] for r in rows}

    async def tombstone(self, owner: str, at: datetime) -> datetime:
        """Upsert, keeping the later time."""
        found: datetime = await self.pool.fetchval(
            "INSERT INTO rag_forgotten (owner, forgotten_at) VALUES ($1, $2)"
            " ON CONFLICT (owner) DO UPDATE"
            " SET forgotten_at = GREATEST(rag_forgotten.forgotten_at, $2) RETURNING forgotten_at",
            owner, at,
        )  # fmt: skip
        return found

    async def forgotten_at(self, owner: str) -> datetime | None:
        """The tombstone, if any."""
        found: datetime | None = await self.pool.fetchval(
            "SELECT forgotten_at FROM rag_forgotten WHERE owner = $1", owner
        )
        return found
