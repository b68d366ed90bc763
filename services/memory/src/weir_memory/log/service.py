"""The turn log searched: a user's turns nearest in meaning (the chats' vectors in the user
vector index), best by words (BM25) and, when the question names a time, nearest within it;
plus the log's retention.

The candidates come back as ranked lists of run ids, for the caller to fuse with extracted
memories (:mod:`..longterm.fusion`); every candidate is read back from PostgreSQL (a turn
deleted meanwhile drops out) and must be at least `min_similarity` close to the question
(calibrated, as memories are), so a greeting does not drag old small talk along.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from ..longterm.models import Vector
from ..longterm.similarity import Similarity
from ..longterm.vector_index import UserVectorIndex
from ..sessions.service import chat_key, run_of
from .index import LexicalLog
from .store import LoggedChat, LogStore
from .temporal import Window

log = structlog.get_logger(__name__)
WINDOW_SCAN = 200  # turns of a named time compared with the question


@dataclass(frozen=True)
class LogWeights:
    """RRF weights of the log's rankings."""

    dense: float = 1.0
    lexical: float = 1.0
    window: float = 1.0


@dataclass(frozen=True)
class Candidates:
    """The log's ranked run ids with their weights, and the turns behind them."""

    rankings: list[tuple[list[str], float]] = field(default_factory=list)
    chats: dict[str, LoggedChat] = field(default_factory=dict)


class TurnLog:
    """Search and retention of every user's turns."""

    def __init__(
        self,
        lexical: LexicalLog,
        index: UserVectorIndex,
        similarity: Similarity,
        *,
        weights: LogWeights,
        min_similarity: float,
        retention_days: float | None,
        clock: Callable[[], datetime],
    ) -> None:
        self.lexical = lexical
        self.store: LogStore = lexical.store
        self._index = index
        self._similarity = similarity
        self._weights = weights
        self._min_similarity = min_similarity
        self._retention_days = retention_days
        self._clock = clock

    async def candidates(
        self,
        user_id: str,
        query: str,
        vector: Vector,
        n: int,
        *,
        window: Window | None = None,
        current: str | None = None,
    ) -> Candidates:
        """The user's best `n` turns by meaning, by words and (given a window) by time; not
        those of the `current` conversation (its recent turns are in the prompt already,
        the older ones in its summary)."""
        hits, lexical, timed = await asyncio.gather(  # by meaning, by words, by time at once
            self._index.search(user_id, ["chat"], vector, n),
            self.lexical.search(user_id, query, n),
            self._in_window(user_id, window, current),
        )
        dense = [run_of(h.id) for h in hits]
        chats = {c.run_id: c for c in timed}
        wanted = [r for r in dict.fromkeys([*dense, *lexical]) if r not in chats]
        # the current conversation's turns are left out in the queries (its recent turns are
        # in the prompt, the older ones in its summary): not read, vectors and all, to drop
        chats |= {c.run_id: c for c in await self.store.by_run(user_id, wanted, besides=current)}
        embedded = {r: c.embedding for r, c in chats.items() if c.embedding}
        sims = dict.fromkeys(chats, 0.0)  # a turn without a vector is close to nothing
        near = self._similarity.to_each(vector, [*embedded.values()])
        sims.update(zip(embedded, near, strict=True))
        close = {r for r, sim in sims.items() if sim >= self._min_similarity}
        in_time = sorted((c.run_id for c in timed), key=lambda r: -sims[r])[:n]
        close |= set(in_time)  # a turn of the time asked about needs no other closeness
        rankings = [
            ([r for r in dense if r in close], self._weights.dense),
            ([r for r in lexical if r in close], self._weights.lexical),
            (in_time, self._weights.window),
        ]
        return Candidates([(runs, w) for runs, w in rankings if runs], {r: chats[r] for r in close})

    async def _in_window(
        self, user_id: str, window: Window | None, current: str | None
    ) -> list[LoggedChat]:
        """Up to `WINDOW_SCAN` turns of the window, latest first, outside the current
        conversation (read in the query: its turns must not crowd out the others)."""
        if window is None:
            return []
        return await self.store.between(user_id, window[0], window[1], WINDOW_SCAN, besides=current)

    async def expire(self, batch: int = 500) -> int:
        """Remove turns older than the retention (none when it is unset); how many."""
        if self._retention_days is None:
            return 0
        before = self._clock() - timedelta(days=self._retention_days)
        total = 0
        while chats := await self.store.older_than(before, batch):
            await self._remove(chats)
            total += len(chats)
        if total:
            log.info("memory.log.expired", chats=total, before=before.isoformat())
        return total

    async def _remove(self, chats: Sequence[LoggedChat]) -> None:
        await self.lexical.expire(chats)
        by_user: dict[str, list[str]] = {}
        for c in chats:
            by_user.setdefault(c.user_id, []).append(chat_key(c.user_id, c.run_id))
        for user_id, keys in by_user.items():
            await self._index.delete(user_id, keys)
        await self.store.delete(chats)
