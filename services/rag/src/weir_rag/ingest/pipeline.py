"""Bytes → drafts: parse (isolated) → clean → chunk → post-process → context → locators.

Each stage obeys its switch in :class:`IngestSwitches`, so its contribution can be measured.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from weir_rag.ingest.chunk_prose import chunk_prose
from weir_rag.ingest.chunk_structured import chunk_rows, chunk_tree
from weir_rag.ingest.cleaner import clean_blocks
from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.isolation import shared_pool
from weir_rag.ingest.loaders import STRUCTURED, detect_format
from weir_rag.ingest.model import Draft, ParsedDocument, ProseDocument, TableDocument
from weir_rag.ingest.postprocess import add_context, drop_fragments, locate, merge_short
from weir_rag.ingest.switches import IngestLimits, IngestSwitches

log = structlog.get_logger(__name__)


async def parse_bytes(
    data: bytes,
    source: str,
    content_type: str | None,
    switches: IngestSwitches,
    limits: IngestLimits,
) -> tuple[str, ParsedDocument]:
    """The format and the parsed document; the parser runs in a child process with limits."""
    fmt = detect_format(source, content_type)
    if not switches.format_aware and fmt in STRUCTURED:
        fmt = "txt"
    if len(data) > limits.max_file_mb * 1024 * 1024:
        raise IngestError(f"the file is larger than {limits.max_file_mb} MB")
    started = time.monotonic()
    pool = shared_pool(limits.parse_memory_mb)
    doc = await asyncio.to_thread(
        pool.parse, data, fmt, source, switches.structure_pdf, limits.parse_timeout_s
    )
    log.info(
        "ingest.parsed",
        source=source,
        format=fmt,
        bytes=len(data),
        duration_s=round(time.monotonic() - started, 3),
    )
    return fmt, doc


async def chunk_document(
    doc: ParsedDocument,
    switches: IngestSwitches,
    limits: IngestLimits,
) -> list[Draft]:
    """Drafts of a parsed document; IngestError when nothing indexable is left."""
    if isinstance(doc, TableDocument):
        drafts = chunk_rows(doc)
    elif isinstance(doc, ProseDocument):
        drafts = await _prose(doc, switches, limits)
    else:
        drafts = chunk_tree(doc, limits.max_chars)
    drafts = [d for d in drafts if d.semantic_text.strip() and d.raw_content.strip()]
    if not drafts:
        raise IngestError("the document has no text to index")
    if len(drafts) > limits.max_chunks:
        raise IngestError(f"the document makes {len(drafts)} chunks; at most {limits.max_chunks}")
    text_chars = sum(len(d.raw_content) for d in drafts)
    if text_chars > limits.max_text_chars:
        raise IngestError(
            f"the document holds {text_chars} characters of text; at most {limits.max_text_chars}"
        )
    return drafts


async def _prose(
    doc: ProseDocument,
    switches: IngestSwitches,
    limits: IngestLimits,
) -> list[Draft]:
    blocks = clean_blocks(doc.blocks) if switches.clean else doc.blocks
    drafts = await chunk_prose(
        blocks,
        switches.semantic_split,
        limits.max_chars,
        limits.overlap_chars,
        limits.semantic_max_units,
    )
    if switches.post_process:
        drafts = merge_short(drafts, limits.merge_below_chars, limits.max_chars)
        drafts = drop_fragments(drafts, limits.min_chars)
    if switches.context_prefix:
        drafts = add_context(drafts, doc.title)
    return locate(drafts, doc.paged, doc.page_label)
