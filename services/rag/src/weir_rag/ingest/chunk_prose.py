"""The Markdown chunker: heading sections → semantic split → fixed-size split.

Tier 1 keeps a section whole when it fits. Tier 2 (when `semantic`) cuts an oversize section
where adjacent sentences share the fewest terms (a lexical signal, see `semantic`: the neural
embedder only ever sees the finished chunks, once). Tier 3 packs what is still too long into
fixed-size pieces with overlap. Code blocks are never cut at any tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from weir_rag.ingest.fixed import pack_fixed
from weir_rag.ingest.model import Block, Draft
from weir_rag.ingest.semantic import cohesion, split_semantic
from weir_rag.ingest.units import Unit, join_units, to_units

log = structlog.get_logger(__name__)


@dataclass
class Section:
    """A heading (if any) and the blocks under it up to the next heading."""

    path: tuple[str, ...]
    blocks: list[Block] = field(default_factory=list)


def sections(blocks: Sequence[Block]) -> list[Section]:
    """Split at every heading; `path` is the chain of enclosing heading titles."""
    stack: list[tuple[int, str]] = []
    out: list[Section] = [Section(())]
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
            out.append(Section(tuple(title for _, title in stack)))
        out[-1].blocks.append(block)
    return [s for s in out if s.blocks]


async def chunk_prose(
    blocks: Sequence[Block],
    semantic: bool,
    max_chars: int,
    overlap: int,
    semantic_max_units: int = 400,
) -> list[Draft]:
    """Drafts for prose; `semantic=False` skips tier 2, and so does a section of more than
    `semantic_max_units` sentences (the windowed similarity grows with it, for little gain)."""
    drafts: list[Draft] = []
    tiers = {"section": 0, "semantic": 0, "fixed": 0}
    for section in sections(blocks):
        units = to_units(section.blocks, max_chars)
        if len(join_units(units)) <= max_chars:
            groups, tier = [units], "section"
        elif semantic and 1 < len(units) <= semantic_max_units:
            groups, tier = _semantic(units, max_chars, overlap), "semantic"
        else:
            groups, tier = pack_fixed(units, max_chars, overlap), "fixed"
        tiers[tier] += 1
        drafts.extend(_draft(g, section.path) for g in groups if g)
    log.debug("ingest.chunk.prose", sections=sum(tiers.values()), **tiers)
    return drafts


def _semantic(units: list[Unit], max_chars: int, overlap: int) -> list[list[Unit]]:
    spans = split_semantic(units, cohesion([u.text for u in units]), max_chars)
    groups: list[list[Unit]] = []
    for span in spans:
        # a single unit still too long (one huge sentence) falls through to tier 3
        fits = len(join_units(span)) <= max_chars
        groups.extend([span] if fits else pack_fixed(span, max_chars, overlap))
    return groups


def _draft(units: Sequence[Unit], path: tuple[str, ...]) -> Draft:
    text = join_units(units)
    pages = tuple(sorted({p for u in units for p in u.pages}))
    return Draft(semantic_text=text, raw_content=text, section=path, pages=pages)
