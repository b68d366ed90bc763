"""Sampling profiles of running services with py-spy, and their top frames as text.

`Profiler` runs one ``py-spy record --format raw`` per service (non-blocking: the service
is never paused) until `stop`; each writes ``<dir>/<service>.collapsed.txt``, collapsed stacks
(``frame;frame;…;leaf count``) that speedscope (https://www.speedscope.app) and
flamegraph.pl open as they are. `summarise` sums them by frame (line numbers dropped) and
writes ``bench/results/profile_<service>.txt``: the top self-time and inclusive frames.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
TOP = 25
_LINE = re.compile(r":\d+\)$")
#: frames that only run other work: the inclusive table starts below them
_DISPATCH = frozenset(
    {"Runner.run", "_worker", "Thread.run", "WorkerThread.run", "Context.run", "Handle._run"}
)
_SITE = re.compile(r"\(.*?(site-packages|src|lib/python3\.\d+)/")


def pyspy_binary() -> str:
    """py-spy next to this interpreter (the dev group installs it), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy is not installed: `python3 -m uv sync --all-packages`")
    return found


class Profiler:
    """py-spy on each given process (name → pid) between `start` and `stop`."""

    def __init__(self, out_dir: Path, pids: dict[str, int], rate: int = 100) -> None:
        self.out_dir = out_dir
        self.pids = pids
        self.rate = rate
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def path(self, name: str) -> Path:
        """The collapsed-stack file of one service."""
        return self.out_dir / f"{name}.collapsed.txt"

    def start(self) -> None:
        """Start sampling every process."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        binary = pyspy_binary()
        for name, pid in self.pids.items():
            argv = [binary, "record", "--pid", str(pid), "--format", "raw", "--rate",
                    str(self.rate), "--nonblocking", "--output", str(self.path(name))]  # fmt: skip
            with (self.out_dir / f"{name}.py-spy.log").open("wb") as log:
                self._procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """Stop sampling (SIGINT makes py-spy write its file) and wait for the files."""
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for name, proc in self._procs.items():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                print(f"py-spy on {name} did not stop; killed")
        self._procs = {}

    def summarise(
        self, turns: int, seconds: float, cpu_ms_per_turn: dict[str, float]
    ) -> dict[str, Path]:
        """Write ``bench/results/profile_<service>.txt`` for every profile; their paths.

        `cpu_ms_per_turn` (from /proc) scales each frame's share of samples to ms per turn.
        """
        written: dict[str, Path] = {}
        for name in self.pids:
            source = self.path(name)
            if not source.exists():
                print(f"no profile for {name} (see {self.out_dir / f'{name}.py-spy.log'})")
                continue
            facts = Facts(name, self.rate, turns, seconds, cpu_ms_per_turn.get(name, 0.0))
            out = RESULTS / f"profile_{name}.txt"
            out.write_text(summary(facts, source.read_text()))
            written[name] = out
        return written


def short(frame: str) -> str:
    """A frame without its line number and with its path from the package on."""
    return _SITE.sub("(", _LINE.sub(")", frame))


def below_loop(frames: list[str]) -> list[str]:
    """The frames under the last event loop or worker-thread frame (the work it runs)."""
    cut = 0
    for i, frame in enumerate(frames):
        if frame.split(" (", 1)[0] in _DISPATCH:
            cut = min(i + 1, len(frames) - 1)  # a dispatcher as the leaf: its own C work
    return frames[cut:]


@dataclass(frozen=True)
class Facts:
    """What a profile summary states besides its frames."""

    name: str
    rate: int
    turns: int
    seconds: float
    cpu_ms_per_turn: float  # the service's own, from /proc


def summary(facts: Facts, collapsed: str) -> str:
    """Top self-time and inclusive frames of one collapsed-stack profile.

    py-spy counts a thread as busy while it is runnable, also while it waits for a core, so
    on a busy machine the samples exceed the CPU time: the ms column is each frame's share
    of the samples times the service's CPU per turn read from /proc.
    """
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [short(f) for f in stack.split(";")]
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(below_loop(frames)):
            inclusive[frame] += n
    sampled_s = total / facts.rate
    head = (
        f"# {facts.name}: {total} samples at {facts.rate} Hz over {facts.seconds:.1f} s "
        f"(≈ {sampled_s:.1f} s busy), {facts.turns} answered turns\n"
        f"# CPU from /proc: {facts.cpu_ms_per_turn:.2f} ms per turn "
        f"(samples: {1000 * sampled_s / max(facts.turns, 1):.1f} ms per turn, "
        "runnable time included)\n"
        "# columns: share of samples, ms of CPU per turn (share × /proc CPU), frame\n"
        "# `Runner.run` / `_worker` as a leaf: C code below them (uvloop, native libraries)\n"
    )

    def table(title: str, counts: Counter[str]) -> str:
        rows = [
            f"{100 * n / max(total, 1):6.1f}%  {facts.cpu_ms_per_turn * n / max(total, 1):8.2f}"
            f"  {frame}"
            for frame, n in counts.most_common(TOP)
        ]
        return f"\n## top {TOP} {title}\n" + "\n".join(rows) + "\n"

    return (
        head
        + table("self time (leaf frames)", own)
        + table("inclusive (below the event loop / worker thread frames)", inclusive)
    )


def main() -> None:
    """Summarise collapsed stacks again: ``pyspy_profile.py DIR [RESULT.json]``."""
    import argparse  # noqa: PLC0415 - only the command line needs it
    import json  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("dir", type=Path, help="the --profile folder")
    parser.add_argument(
        "result", type=Path, nargs="?", default=RESULTS / "load_profiled.json",
        help="the run's result (its cpu_ms_per_turn, turns_answered, window_s)",
    )  # fmt: skip
    args = parser.parse_args()
    result = json.loads(args.result.read_text())
    names = [p.name.removesuffix(".collapsed.txt") for p in args.dir.glob("*.collapsed.txt")]
    profiler = Profiler(args.dir, dict.fromkeys(sorted(names), 0))
    written = profiler.summarise(
        result["turns_answered"], result["window_s"], result["cpu_ms_per_turn"]
    )
    for name, path in written.items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
