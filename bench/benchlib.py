"""What every benchmark shares: machine facts, percentiles, writing results."""

from __future__ import annotations

import json
import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def machine() -> dict[str, Any]:
    """CPU, memory and Python of this machine."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    mem = re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.MULTILINE)
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": model.group(1).strip() if model else platform.processor(),
        "memory_gb": round(int(mem.group(1)) / 1024**2, 1) if mem else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2),  # other work on the machine
    }


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank), rounded to 0.01."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[rank], 2)


def write_result(name: str, result: dict[str, Any]) -> Path:
    """Write `bench/results/<name>.json` with the machine and the date added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.json"
    full = {**result, "machine": machine(), "date": datetime.now(UTC).isoformat(timespec="seconds")}
    out.write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n")
    return out
