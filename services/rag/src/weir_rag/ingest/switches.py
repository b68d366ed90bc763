"""Stage switches (for ablation, F14) and size/time limits of the ingestion pipeline."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IngestSwitches:
    """Turn single stages off to measure what each contributes; all on by default."""

    structure_pdf: bool = True  # headings/tables/code from PDF layout; off: plain text per page
    clean: bool = True  # NFKC, control characters, page-number lines, whitespace (prose only)
    format_aware: bool = True  # CSV rows / JSON items with dual storage; off: split as prose
    semantic_split: bool = True  # tier 2 of the Markdown chunker (cuts at topic shifts)
    post_process: bool = True  # drop fragments, merge short chunks
    context_prefix: bool = True  # "[H1 title] " before the searched text of prose chunks


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """Sizes in characters and the parser's budget."""

    max_chars: int = 800  # a chunk's target maximum (code blocks may exceed it, never cut)
    overlap_chars: int = 80  # carried into the next chunk by the fixed-size splitter
    min_chars: int = 30  # fewer meaningful characters than this: noise, dropped
    merge_below_chars: int = 150  # shorter chunks merge with a neighbour of the same section
    parse_timeout_s: float = 60.0  # the parser process is killed after this
    parse_memory_mb: int = 2048  # address-space cap of the parser process
    max_file_mb: int = 100  # larger files are refused before parsing
    max_chunks: int = 20_000  # a document that makes more chunks is refused
    max_text_chars: int = 20_000_000  # ... and one whose indexable text is longer
    embed_batch: int = 32  # texts per embedder call
    semantic_max_units: int = 400  # larger sections skip tier 2 (packed by size instead)
