"""`weir_common.heap`: collection held through start-up, then the heap frozen and young
objects collected every `YOUNG_THRESHOLD` allocations; a service app settles its heap once
started, and only when `serve` runs it (an app started inside a test process leaves that
process's collector alone)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY

from weir_common import heap
from weir_common.bus import make_broker
from weir_common.events import new_id
from weir_common.runtime import service_app
from weir_common.settings import WeirSettings


@pytest.fixture
def restored_gc() -> Iterator[None]:
    """The interpreter's collector as it was (pytest's process goes on after the test)."""
    threshold, enabled, callbacks = gc.get_threshold(), gc.isenabled(), list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def _gc_seconds() -> float:
    """`weir_gc_seconds_total` of full collections, as `/metrics` serves it."""
    return REGISTRY.get_sample_value("weir_gc_seconds_total", {"generation": "2"}) or 0.0


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.unit
def test_start_up_is_held_then_frozen_and_collected_again(restored_gc: None) -> None:
    heap.hold()
    assert not gc.isenabled()
    kept = [_Cycle() for _ in range(1000)]  # start-up's objects, kept
    _Cycle()  # start-up's garbage: a cycle only the collector frees
    garbage_before = gc.get_count()[0]
    assert garbage_before > 0  # counted, not collected while held

    frozen = heap.settle()

    assert gc.isenabled()
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
    assert frozen == gc.get_freeze_count() >= len(kept)
    # the frozen objects are out of every generation a collection walks
    assert gc.get_count()[0] < garbage_before
    assert sum(1 for o in gc.get_objects() if isinstance(o, _Cycle)) == 0
    # what is built afterwards is collected as before, and the time it takes is counted
    spent = _gc_seconds()
    _Cycle()
    assert gc.collect() >= 1
    assert _gc_seconds() > spent
    heap.settle()  # again: still one timer
    assert sum(isinstance(c, heap.CollectionTimer) for c in gc.callbacks) == 1


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("served", [True, False], ids=["served", "in-process"])
async def test_an_app_settles_its_heap_once_started_when_served(
    stack_env: dict[str, str], restored_gc: None, served: bool
) -> None:
    settings = WeirSettings(
        kafka_bootstrap_servers=stack_env["KAFKA_BOOTSTRAP_SERVERS"],
        topic_prefix=f"heap{new_id()[:8]}.",
        topic_partitions=1,
    )
    broker = make_broker(settings.kafka_bootstrap_servers, "heaptest", TracerProvider())
    app = service_app(name="heaptest", settings=settings, broker=broker)
    threshold = gc.get_threshold()
    if served:  # what `serve` does before it runs the app
        heap.hold()
        app.state.settle_heap = True
    async with app.router.lifespan_context(app):
        assert gc.isenabled()
        if served:
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
        else:
            assert gc.get_freeze_count() == 0
            assert gc.get_threshold() == threshold
