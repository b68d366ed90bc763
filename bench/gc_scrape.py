"""The garbage collector's time in each service, from its `/metrics` (`weir_gc_seconds`)."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


async def gc_seconds(urls: dict[str, str], token: str) -> dict[str, float]:
    """Seconds each service's collector has run since it started (all generations)."""
    out: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=10.0) as http:
        for name, url in urls.items():
            answer = await http.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"})
            answer.raise_for_status()
            out[name] = sum(
                sample.value
                for family in text_string_to_metric_families(answer.text)
                if family.name == "weir_gc_seconds"
                for sample in family.samples
                if sample.name == "weir_gc_seconds_total"
            )
    return out


def gc_ms_per_turn(
    before: dict[str, float], after: dict[str, float], turns: int
) -> dict[str, float]:
    """Each service's collector time during the load, in ms per answered turn."""
    return {
        name: round(1000 * (after[name] - before.get(name, 0.0)) / max(turns, 1), 2)
        for name in sorted(after)
    }
