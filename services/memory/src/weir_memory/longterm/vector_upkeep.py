"""One embedder for every vector: re-embed what another one made, rebuild the index.

The embedder can change between two starts: a setting, the term-frequency fallback when the
model does not answer, the model coming back. Vectors of two embedders (of two sizes, or of
one size but another space) must never meet in a search, a sum or a merge. So at start-up,
before the service takes any turn, rows whose vector another embedder made are re-embedded
from their stored text, sessions' sums are recomputed from their chats, and the vector index
is rebuilt from PostgreSQL whenever it may not hold exactly these vectors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import structlog

from weir_common.embeddings import Embedder

from ..db import Database
from ..log.context import in_context
from ..summary import chat_text
from .models import Vector
from .vector_index import UserVectorIndex
from .vector_rows import VectorRows

log = structlog.get_logger(__name__)
EMBED_BATCH = 64
SESSION_BATCH = 256
LOAD_PAGE = 1000
# one replica re-embeds at a time; the others wait for it, then find nothing left to do
_LOCK = "memory-upkeep:vectors"


class FallbackReembedError(RuntimeError):
    """The configured embedder is down and the store holds its vectors: falling back would
    re-embed them all into term-frequency vectors (and back again once it returns)."""


@dataclass
class VectorUpkeep:
    """Bring the stored vectors and the index to `embedder` (tagged in `rows`).

    `index_name` names what the index keeps across restarts (a Milvus collection); None for
    an index that keeps nothing, which is then loaded at every start.
    """

    db: Database
    rows: VectorRows
    embedder: Embedder
    index: UserVectorIndex
    index_name: str | None
    may_reembed: bool = True  # False for the automatic fallback: never re-embed for it
    context_weight: float = 0.0  # of the previous chat's vector in a chat's (`..log.context`)

    async def run(self) -> None:
        """Adopt untagged vectors, re-embed foreign ones, rebuild the index if needed."""
        async with self.db.advisory_lock(_LOCK):
            adopted = await self.rows.adopt_unlabelled()
            foreign = await self.rows.count_foreign()
            if adopted:
                log.info("memory.vectors.adopted", rows=adopted, embedder=self.rows.embedder)
            if any(foreign.values()):
                missing = await self.rows.chats_without_vectors()
                if not self.may_reembed and sum(foreign.values()) > missing:
                    raise FallbackReembedError(
                        f"the embedding model is unavailable and {sum(foreign.values())}"
                        f" stored rows hold its vectors; not re-embedding them into"
                        f" {self.rows.embedder} (set EMBEDDER=tf to switch on purpose)"
                    )
                await self._reembed(foreign, missing)
            if self.index_name is None or not await self.rows.index_built(self.index_name):
                await self._rebuild()

    async def _reembed(self, foreign: dict[str, int], missing: int) -> None:
        started = time.monotonic()
        switched = sum(foreign.values()) > missing  # vectors of another embedder exist
        log.warning("memory.vectors.reembedding", embedder=self.rows.embedder,
                    chats_without_vector=missing, **foreign)  # fmt: skip
        if switched and self.index_name is not None:  # the index may hold foreign vectors
            await self.rows.mark_index(self.index_name, built=False)
        items = await self._texts("memory_items")
        chats = await self._texts("memory_chats")
        sessions = await self._sessions()
        if not switched and self.index_name is not None:  # only chats the index missed
            await self.index.upsert(await self.rows.chat_records(chats))
        log.info("memory.vectors.reembedded", embedder=self.rows.embedder, items=len(items),
                 chats=len(chats), sessions=sessions,
                 seconds=round(time.monotonic() - started, 1))  # fmt: skip

    async def _texts(self, table: str) -> list[Any]:
        """Re-embed the foreign rows of `table`; returns their keys."""
        done: list[Any] = []
        after: object = None
        while batch := await self.rows.foreign_texts(table, after, EMBED_BATCH):
            texts = [chat_text(t) if table == "memory_chats" else t for _, t in batch]
            vectors = await self.embedder.embed_documents(texts)
            keys = [key for key, _ in batch]
            if table == "memory_chats" and self.context_weight:
                vectors = await self._in_context(keys, vectors)
            await self.rows.set_vectors(table, list(zip(keys, vectors, strict=True)))
            done.extend(keys)
            after = keys[-1]
            log.debug("memory.vectors.reembedding.progress", table=table, rows=len(done))
        return done

    async def _in_context(self, ids: list[int], vectors: list[Vector]) -> list[Vector]:
        """Chats' new vectors leaning towards their previous chat's, as `SessionMemory`
        records them. Chats are re-embedded in id order, so a previous chat already has its
        new vector: stored (an earlier batch) or just made (this one)."""
        before = await self.rows.chats_before(ids)
        made: dict[int, Vector] = {}
        for chat_id, own in zip(ids, vectors, strict=True):
            previous_id, stored = before.get(chat_id, (None, None))
            previous = made.get(previous_id, stored) if previous_id is not None else None
            made[chat_id] = in_context(own, previous, self.context_weight)
        return [made[i] for i in ids]

    async def _sessions(self) -> int:
        done, after = 0, 0
        while batch := await self.rows.foreign_sessions(after, SESSION_BATCH):
            await self.rows.resum_sessions([key for _, key in batch])
            done, after = done + len(batch), batch[-1][0]
        return done

    async def _rebuild(self) -> None:
        started, loaded = time.monotonic(), 0
        await self.index.reset()
        async for records in self.rows.records(LOAD_PAGE):
            await self.index.upsert(records)
            loaded += len(records)
        if self.index_name is not None:
            await self.rows.mark_index(self.index_name, built=True)
        log.info("memory.vectors.index_rebuilt", index=self.index_name or "in-process",
                 records=loaded, embedder=self.rows.embedder,
                 seconds=round(time.monotonic() - started, 1))  # fmt: skip
