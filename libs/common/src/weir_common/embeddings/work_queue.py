"""One thread in front of a local embedding engine: queries first, waiting queries together.

A local engine embeds one batch at a time. Before this queue, calls waited their turn in
order, so a search query (a person waits for its answer) could wait behind a background
batch of passages (memory's analysis of earlier turns, an ingest). `EmbedQueue` runs:

- queries before passages: the queries waiting when the engine comes free are encoded as one
  batch (up to `batch_size` texts), which also costs less per text than one by one;
- passages in slices of `slice_size` texts, so a query that arrives waits at most one slice;
  a call's slices keep their order, and calls of passages keep theirs.

Every call gets its vectors in its order, or the engine's exception. `call` runs any other
function on the same thread (settings such as OpenMP's thread count are the thread's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from weir_common.embeddings.base import Vector

Encode = Callable[[list[str], bool], list[Vector]]
T = TypeVar("T")


@dataclass(eq=False)
class _Call:
    texts: list[str]
    is_query: bool
    future: asyncio.Future[list[Vector]]
    loop: asyncio.AbstractEventLoop
    done: list[Vector] = field(default_factory=list)
    failed: bool = False

    def settle(self, value: Any, error: BaseException | None) -> None:
        """Hand the outcome to the caller's loop (a caller that gave up is skipped)."""
        self.failed = error is not None

        def resolve() -> None:
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(value)

        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
            self.loop.call_soon_threadsafe(resolve)


class EmbedQueue:
    """Runs `encode(texts, is_query)` on its own thread, queries first (module docstring)."""

    def __init__(
        self, encode: Encode, *, batch_size: int = 32, slice_size: int = 8, name: str = "embed"
    ) -> None:
        self._encode = encode
        self._batch_size = max(1, batch_size)
        self._slice_size = max(1, slice_size)
        self._name = name
        self._queries: deque[_Call] = deque()
        self._passages: deque[_Call] = deque()
        self._others: deque[tuple[Callable[[], Any], _Call]] = deque()
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None

    async def run(self, texts: list[str], *, is_query: bool) -> list[Vector]:
        """The vectors of `texts`, in order (an empty list at once for no texts)."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        call = _Call(list(texts), is_query, loop.create_future(), loop)
        self._put(self._queries if is_query else self._passages, call)
        return await call.future

    async def call(self, fn: Callable[[], T]) -> T:
        """`fn()` on the queue's thread, before the next batch."""
        loop = asyncio.get_running_loop()
        call = _Call([], False, loop.create_future(), loop)
        self._put(self._others, (fn, call))
        result: T = await call.future  # type: ignore[assignment]  # fn's own value
        return result

    def _put(self, into: deque[Any], item: Any) -> None:
        with self._ready:
            into.append(item)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
            self._ready.notify()

    def _work(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(self._has_work)
                other = self._others.popleft() if self._others else None
                if other is None:
                    calls, texts, is_query = self._next()
            if other is not None:
                fn, call = other
                try:
                    call.settle(fn(), None)
                except Exception as exc:  # the caller gets it
                    call.settle(None, exc)
                continue
            try:
                vectors = self._encode(texts, is_query)
            except Exception as exc:  # every caller in the batch gets it
                for call in calls:
                    call.settle(None, exc)
                continue
            self._deliver(calls, vectors, is_query)

    def _has_work(self) -> bool:
        """Anything to run (called with the lock held)? Drops passage calls that need no more
        slices: their engine failed, or their caller gave up (a hint read across threads)."""
        while self._passages and (self._passages[0].failed or self._passages[0].future.done()):
            self._passages.popleft()
        return bool(self._others or self._queries or self._passages)

    def _next(self) -> tuple[list[_Call], list[str], bool]:
        """The next batch (called with the lock held): waiting queries, or a passage slice."""
        if self._queries:
            calls = [self._queries.popleft()]
            texts = list(calls[0].texts)
            while self._queries and len(texts) + len(self._queries[0].texts) <= self._batch_size:
                calls.append(self._queries.popleft())
                texts.extend(calls[-1].texts)
            return calls, texts, True
        call = self._passages[0]
        start = len(call.done)
        texts = call.texts[start : start + self._slice_size]
        if start + len(texts) >= len(call.texts):
            self._passages.popleft()  # its last slice
        return [call], texts, False

    def _deliver(self, calls: list[_Call], vectors: list[Vector], is_query: bool) -> None:
        if is_query:
            at = 0
            for call in calls:
                call.settle(vectors[at : at + len(call.texts)], None)
                at += len(call.texts)
            return
        (call,) = calls
        call.done.extend(vectors)
        if len(call.done) >= len(call.texts):
            call.settle(call.done, None)
