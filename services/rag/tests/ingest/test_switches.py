"""Each stage switch turns exactly its stage off (F14 ablation)."""

from __future__ import annotations

import pytest

from weir_rag.ingest import IngestLimits, IngestSwitches, chunk_document, parse_bytes
from weir_rag.ingest.model import Draft

pytestmark = pytest.mark.unit

DOC = """# Ｒｅｄｉｓ runbook

## Eviction

Set maxmemory and choose an eviction policy such as allkeys-lru before traffic grows.
Watch the evicted_keys counter: a steady climb means the cache is too small for the load.

- 7 -

## Failover

Sentinel promotes a replica when the primary fails; clients reconnect through Sentinel.
Check the logs for the switch-master event and confirm that the old primary rejoins as a
replica once it is back.
""".encode()


async def _drafts(**switches: bool) -> list[Draft]:
    flags = IngestSwitches(**switches)
    _, doc = await parse_bytes(DOC, "redis.md", None, flags, IngestLimits())
    return await chunk_document(doc, flags, IngestLimits())


async def test_all_stages_on() -> None:
    drafts = await _drafts()
    assert [d.locator for d in drafts] == ["Redis runbook", "Redis runbook > Failover"]
    assert drafts[1].semantic_text.startswith("[Redis runbook] ## Failover")
    assert "- 7 -" not in drafts[0].raw_content


async def test_context_prefix_off() -> None:
    drafts = await _drafts(context_prefix=False)
    assert drafts[1].semantic_text.startswith("## Failover")


async def test_post_process_off_keeps_the_heading_only_chunk() -> None:
    drafts = await _drafts(post_process=False)
    assert [d.locator for d in drafts] == [
        "Redis runbook",
        "Redis runbook > Eviction",
        "Redis runbook > Failover",
    ]


async def test_clean_off_keeps_width_variants_and_page_numbers() -> None:
    drafts = await _drafts(clean=False)
    assert drafts[0].raw_content.startswith("# Ｒｅｄｉｓ runbook")
    assert "- 7 -" in drafts[0].raw_content
