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
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
TOP = 25
_LINE = re.compile(r":\d+\)$")
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

    def summarise(self, turns: int, seconds: float) -> dict[str, Path]:
        """Write ``bench/results/profile_<service>.txt`` for every profile; their paths."""
        written: dict[str, Path] = {}
        for name in self.pids:
            source = self.path(name)
            if not source.exists():
                print(f"no profile for {name} (see {self.out_dir / f'{name}.py-spy.log'})")
                continue
            text = summary(name, source.read_text(), self.rate, turns, seconds)
            out = RESULTS / f"profile_{name}.txt"
            out.write_text(text)
            written[name] = out
        return written


def short(frame: str) -> str:
    """A frame without its line number and with its path from the package on."""
    return _SITE.sub("(", _LINE.sub(")", frame))


def summary(name: str, collapsed: str, rate: int, turns: int, seconds: float) -> str:
    """Top self-time and inclusive frames of one collapsed-stack profile."""
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
        for frame in set(frames):
            inclusive[frame] += n
    ms_per_sample = 1000 / rate
    head = (
        f"# {name}: {total} samples at {rate} Hz over {seconds:.1f} s "
        f"(≈ {total * ms_per_sample / 1000:.1f} s on CPU), {turns} turns "
        f"(≈ {total * ms_per_sample / max(turns, 1):.1f} ms sampled per turn)\n"
        "# columns: share of samples, ms per turn, frame\n"
    )

    def table(title: str, counts: Counter[str]) -> str:
        rows = [
            f"{100 * n / max(total, 1):6.1f}%  {n * ms_per_sample / max(turns, 1):8.2f}  {frame}"
            for frame, n in counts.most_common(TOP)
        ]
        return f"\n## top {TOP} {title}\n" + "\n".join(rows) + "\n"

    return head + table("self time (leaf frames)", own) + table("inclusive", inclusive)
