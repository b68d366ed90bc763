"""The vector index as session memory sees it: chat vectors are kept in PostgreSQL too.

`SessionMemory.record` embeds a chat once and hands the vector to the index only. Keeping it
in `memory_chats` as well (seed 001's `chats.summary_embedding`) lets the index be rebuilt
after a restart, and re-embedded after an embedder change, without calling the model for
every past chat. Everything else passes straight through.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..longterm.index import Kind, VectorHit, VectorIndex, VectorRecord
from .service import run_of
from .store import SessionStore


class ChatVectorKeeper:
    """A `VectorIndex` that also stores every chat record's vector in `memory_chats`."""

    def __init__(self, index: VectorIndex, store: SessionStore) -> None:
        self._index = index
        self._store = store

    async def open(self, dimension: int) -> None:
        """Open the wrapped index."""
        await self._index.open(dimension)

    async def close(self) -> None:
        """Close the wrapped index."""
        await self._index.close()

    async def reset(self) -> None:
        """Empty the wrapped index."""
        await self._index.reset()

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Keep the chats' vectors in PostgreSQL (their rows exist already), then index all."""
        chats = [(r.user_id, run_of(r.id), r.vector) for r in records if r.kind == "chat"]
        if chats:
            await self._store.keep_chat_vectors(chats)
        await self._index.upsert(records)

    async def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete from the wrapped index."""
        await self._index.delete(user_id, ids)

    async def delete_user(self, user_id: str) -> None:
        """Delete a user from the wrapped index."""
        await self._index.delete_user(user_id)

    async def search(
        self,
        user_id: str,
        kinds: Sequence[Kind],
        vector: Sequence[float],
        limit: int,
        session_id: str | None = None,
    ) -> list[VectorHit]:
        """Search the wrapped index."""
        return await self._index.search(user_id, kinds, vector, limit, session_id)
