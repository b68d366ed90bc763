"""Document ingestion: stored file → chunks (dual storage) → both indexes, with a registry.

A pure library (no broker imports). Entry point: :func:`ingest`; the stages are usable on
their own (:func:`parse_bytes`, :func:`chunk_document`, :func:`build_chunks`).
"""

from weir_common.objects import LocalObjectStore, ObjectNotFoundError, ObjectStore
from weir_rag.ingest.chunks import content_hash, to_chunks
from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.model import (
    Block,
    Draft,
    ParsedDocument,
    ProseDocument,
    TableDocument,
    TreeDocument,
)
from weir_rag.ingest.pipeline import chunk_document, parse_bytes
from weir_rag.ingest.registry import (
    Decision,
    DocumentInfo,
    DocumentRecord,
    DocumentRegistry,
    InMemoryRegistry,
)
from weir_rag.ingest.registry_pg import PostgresRegistry
from weir_rag.ingest.service import build_chunks, embed_chunks, ingest
from weir_rag.ingest.switches import IngestLimits, IngestSwitches

__all__ = [
    "Block",
    "Decision",
    "DocumentInfo",
    "DocumentRecord",
    "DocumentRegistry",
    "Draft",
    "InMemoryRegistry",
    "IngestError",
    "IngestLimits",
    "IngestSwitches",
    "LocalObjectStore",
    "ObjectNotFoundError",
    "ObjectStore",
    "ParsedDocument",
    "PostgresRegistry",
    "ProseDocument",
    "TableDocument",
    "TreeDocument",
    "build_chunks",
    "chunk_document",
    "content_hash",
    "embed_chunks",
    "ingest",
    "parse_bytes",
    "to_chunks",
]
