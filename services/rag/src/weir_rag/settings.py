"""Rag settings: where documents, chunks and indexes live, and retrieval defaults."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from weir_common.settings import WeirSettings


class RagSettings(WeirSettings):
    """The knowledge service: ingestion and hybrid retrieval."""

    service_name: ClassVar[str] = "rag"

    database_url: str = "postgresql://weir@127.0.0.1:15432/weir"
    milvus_uri: str = "http://127.0.0.1:19530"
    es_url: str | None = None
    max_concurrent_retrievals: int = Field(default=8, ge=1)
    ingest_timeout_s: float = Field(default=600.0, gt=0, description="One document's limit.")
    ingest_workers: int = Field(
        default=2,
        ge=1,
        description="Documents ingested at once (consumers of ingest.requested, each on its "
        "own partitions; at most TOPIC_PARTITIONS): one parses while another embeds.",
    )
