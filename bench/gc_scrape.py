"""The garbage collector's time in each service, from its `/metrics` (`weir_gc_seconds`)."""

from __future__ import annotations

import re

import httpx

_SERIES = re.compile(r'^weir_gc_seconds_total\{generation="(\d)"\} ([0-9.eE+-]+)$', re.MULTILINE)


async def gc_seconds(urls: dict[str, str], token: str) -> dict[str, float]:
    """Seconds each service's collector has run since it started (all generations)."""
    out: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=10.0) as http:
        for name, url in urls.items():
            answer = await http.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"})
            answer.raise_for_status()
            out[name] = sum(float(value) for _, value in _SERIES.findall(answer.text))
    return out


def gc_ms_per_turn(
    before: dict[str, float], after: dict[str, float], turns: int
) -> dict[str, float]:
    """Each service's collector time during the load, in ms per answered turn."""
    return {
        name: round(1000 * (after[name] - before.get(name, 0.0)) / max(turns, 1), 2)
        for name in sorted(after)
    }
