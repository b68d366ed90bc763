"""CPU time and resident memory of whole process trees, read from /proc (Linux only).

A tracked process is named by the pid of its root (a service's python, an engine's leader
such as PostgreSQL's postmaster or `runuser`, the Kafka JVM, Milvus Lite's launcher); its
tree is the root, every descendant, and every process of the root's session (each managed
process starts a session of its own). CPU of a tree counts each live process's own
utime+stime plus its cutime+cstime, the time of children it has already reaped, so the
short-lived children between two snapshots (PostgreSQL backends, MCP servers) are counted.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Proc:
    """One process as /proc/<pid>/stat shows it."""

    pid: int
    ppid: int
    session: int
    cpu_s: float  # utime + stime
    reaped_cpu_s: float  # cutime + cstime: children already waited for
    rss_mb: float


def _read(pid: int) -> Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone in the meantime
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = raw[raw.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state): field n is fields[n - 3]
    return Proc(
        pid=pid,
        ppid=int(fields[1]),
        session=int(fields[3]),
        cpu_s=(int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
        reaped_cpu_s=(int(fields[13]) + int(fields[14])) / CLOCK_TICKS,
        rss_mb=int(fields[21]) * PAGE_BYTES / 1024**2,
    )


def snapshot() -> dict[int, Proc]:
    """Every process of the machine now."""
    procs: dict[int, Proc] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (proc := _read(int(entry.name))) is not None:
            procs[proc.pid] = proc
    return procs


def tree(procs: dict[int, Proc], root: int) -> list[Proc]:
    """The root, its descendants and its session's processes."""
    children: dict[int, list[int]] = defaultdict(list)
    for proc in procs.values():
        children[proc.ppid].append(proc.pid)
    found = {pid for pid, proc in procs.items() if proc.session == root}
    found.add(root)
    stack = list(found)
    while stack:
        for child in children[stack.pop()]:
            if child not in found:
                found.add(child)
                stack.append(child)
    return [procs[pid] for pid in found if pid in procs]


@dataclass(frozen=True)
class Usage:
    """CPU seconds (cumulative) and RSS (now) of each tracked tree at one moment."""

    at: float  # time.monotonic()
    cpu_s: dict[str, float]
    rss_mb: dict[str, float]
    processes: dict[str, int]  # how many processes each tree has now
    pss_mb: dict[str, float]  # proportional set size (shared pages split): when asked for


def pss_mb(pid: int) -> float:
    """The process's proportional set size (0 when gone or unreadable)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def usage(roots: dict[str, int], at: float, *, pss: bool = False) -> Usage:
    """Read every tracked tree now (`pss`: also the PSS of each, which costs more).

    RSS summed over a tree counts shared pages once per process (PostgreSQL's shared
    buffers in every backend); PSS splits them between the processes that share them.
    """
    procs = snapshot()
    cpu: dict[str, float] = {}
    rss: dict[str, float] = {}
    count: dict[str, int] = {}
    proportional: dict[str, float] = {}
    for name, root in roots.items():
        members = tree(procs, root)
        cpu[name] = sum(p.cpu_s + p.reaped_cpu_s for p in members)
        rss[name] = round(sum(p.rss_mb for p in members), 1)
        count[name] = len(members)
        if pss:
            proportional[name] = round(sum(pss_mb(p.pid) for p in members), 1)
    return Usage(at=at, cpu_s=cpu, rss_mb=rss, processes=count, pss_mb=proportional)


def cpu_between(before: Usage, after: Usage) -> dict[str, float]:
    """CPU seconds each tree spent between two readings (a restarted root counts from 0)."""
    return {name: max(0.0, after.cpu_s[name] - before.cpu_s.get(name, 0.0)) for name in after.cpu_s}


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
