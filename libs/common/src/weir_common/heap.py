"""A service process's garbage collector: held through start-up, then the start-up heap
frozen and young objects collected less often.

A started service keeps ~130,000 (gateway) to ~530,000 (memory) objects until it exits:
litellm's price tables and provider modules, pydantic schemas, the event catalogue. Python
walked all of them at every full collection: 220-650 ms each with the event loop stopped,
five to eight of them during start-up, and during `bench/load.py` (200 clients × 5 turns)
about one every five seconds in the router. Its young collections were costly too: a chat
turn's litellm calls build thousands of short-lived containers, and the default threshold
(700 allocations) collected them ~20 times a second, ~1.1 ms each.

`hold` turns collection off for start-up (its objects are kept anyway): each service's
`__main__` calls it before its imports, `runtime.serve` again. `settle`, once the service is
up (`runtime.service_app`'s lifespan, in a process `serve` runs), collects what start-up
left behind, freezes the rest (`gc.freeze`: never walked again) and turns collection back
on with `YOUNG_THRESHOLD`. Measured with a `gc.callbacks` probe over the same load: the
router's collections after start-up took 2.24 s of CPU at Python's thresholds and
0.35-0.56 s with these (harness 0.18 → 0.06-0.09 s, memory 0.22 → 0.03-0.06 s). Its full
collections had averaged 260 ms; now they walk only what came after start-up (20-78 ms),
and its longest pause of any kind was 116 ms.
"""

from __future__ import annotations

import gc
import time
from typing import Any

#: Net allocations between two young-generation collections (Python's default: 700). Most
#: of a turn's containers are freed by reference counting before a collection comes.
YOUNG_THRESHOLD = 10_000


def hold() -> None:
    """No collection until `settle`: what start-up builds, it keeps."""
    gc.disable()


def settle() -> int:
    """Collect start-up's garbage, freeze what is left, collect again from now on (young
    objects every `YOUNG_THRESHOLD` allocations); how many objects were frozen."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.enable()
    if not any(isinstance(callback, CollectionTimer) for callback in gc.callbacks):
        gc.callbacks.append(CollectionTimer())
    return gc.get_freeze_count()


class CollectionTimer:
    """A `gc.callbacks` entry adding each collection's time to `weir_gc_seconds{generation}`
    (`/metrics`; `bench/load.py` reads it per service). Collections never overlap."""

    def __init__(self) -> None:
        from weir_common.metrics import GC_SECONDS  # noqa: PLC0415 - only where it is served

        self._seconds = GC_SECONDS
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            spent = time.perf_counter() - self._began
            self._seconds.labels(str(info["generation"])).inc(spent)
