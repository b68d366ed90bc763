"""Vectors in this process: the zero-setup :class:`~weir_common.search.vectors.VectorIndex`
(exact search; whoever uses it rebuilds it from its source of truth at start)."""

from __future__ import annotations

from collections.abc import Sequence

from weir_common.search.similarity import cosines
from weir_common.search.vectors import (
    VectorMatch,
    VectorRow,
    VectorSchema,
    Where,
    check_dimension,
    fit_fields,
    matches,
)


class InMemoryVectorIndex:
    """Rows in a dict, searched exhaustively by cosine."""

    def __init__(self, dimension: int, schema: VectorSchema | None = None) -> None:
        self.dimension = dimension
        self.schema = schema or VectorSchema()
        self._rows: dict[str, VectorRow] = {}

    async def open(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """Nothing to release."""

    async def reset(self) -> None:
        """Forget every row."""
        self._rows.clear()

    async def flush(self) -> None:
        """Nothing is buffered."""

    async def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Insert or replace by key (all or nothing when a vector has the wrong size)."""
        for row in rows:
            check_dimension(self.dimension, row.vector)
        for row in rows:
            fields = fit_fields(self.schema, row.fields)
            self._rows[row.id] = VectorRow(row.id, [float(v) for v in row.vector], fields)

    def _where(self, where: Where, ids: Sequence[str] | None = None) -> list[VectorRow]:
        pool = self._rows.values() if ids is None else (self._rows.get(i) for i in ids)
        return [r for r in pool if r is not None and matches(r.fields, where)]

    async def delete(self, where: Where, ids: Sequence[str] | None = None) -> None:
        """Delete matching rows."""
        if not where and ids is None:
            raise ValueError("delete without a filter: use reset()")
        for row in self._where(where, ids):
            del self._rows[row.id]

    async def query(self, where: Where, fields: Sequence[str] = ()) -> list[VectorMatch]:
        """Matching rows, score 0."""
        return [_match(r, 0.0, fields) for r in self._where(where)]

    async def search(
        self, vector: Sequence[float], k: int, where: Where, fields: Sequence[str] = ()
    ) -> list[VectorMatch]:
        """Exact search by cosine."""
        check_dimension(self.dimension, vector)
        pool = self._where(where)
        if not pool or k < 1:
            return []
        scores = cosines([r.vector for r in pool], vector)
        order = sorted(range(len(pool)), key=lambda i: scores[i], reverse=True)[:k]
        return [_match(pool[i], scores[i], fields) for i in order]


def _match(row: VectorRow, score: float, fields: Sequence[str]) -> VectorMatch:
    return VectorMatch(row.id, score, {name: row.fields[name] for name in fields})
