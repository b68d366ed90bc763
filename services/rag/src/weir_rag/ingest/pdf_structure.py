"""PDF lines of all pages → Markdown blocks: headings by size rank, paragraphs, code, tables.

Heading levels: every size ≥ 1.15 × the body size is a level (largest = H1, capped at H4);
a whole-line bold line at body size is one level below those. Running heads and footers
(the same line on most pages) and table-of-contents pages are skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from weir_rag.ingest.model import Block
from weir_rag.ingest.pdf_layout import Line
from weir_rag.ingest.pdf_page import Item, TableItem
from weir_rag.ingest.pdf_paragraphs import ParagraphBuilder

_TOC_LINE = re.compile(r"(\.\s?){3,}\s*\d{1,4}\s*$|…+\s*\d{1,4}\s*$")
_LETTER = re.compile(r"[^\W\d_]")
HEADING_RATIO = 1.15
MAX_HEADING_CHARS = 150


def body_size(lines: Sequence[Line]) -> float:
    """The font size carrying the most characters."""
    sizes: Counter[float] = Counter()
    for ln in lines:
        sizes[ln.size] += ln.chars
    return sizes.most_common(1)[0][0] if sizes else 10.0


def is_toc_page(items: Sequence[Item]) -> bool:
    """Most lines end in dot leaders and a page number."""
    lines = [i for i in items if isinstance(i, Line)]
    leaders = sum(1 for ln in lines if _TOC_LINE.search(ln.text))
    return leaders >= 5 and leaders >= 0.3 * len(lines)


def running_lines(pages: Sequence[Sequence[Item]]) -> set[Line]:
    """Lines at the top or bottom of a page whose text (digits aside) recurs on most pages."""
    if len(pages) < 3:
        return set()
    edges: list[list[Line]] = []
    for items in pages:
        lines = sorted((i for i in items if isinstance(i, Line)), key=lambda ln: ln.top)
        edges.append(lines[:3] + lines[-3:] if len(lines) > 6 else lines)
    counts: Counter[str] = Counter()
    for page in edges:
        counts.update({_key(ln) for ln in page})
    threshold = max(3, len(pages) // 2)
    return {ln for page in edges for ln in page if counts[_key(ln)] >= threshold}


def _key(line: Line) -> str:
    return re.sub(r"\d+", "#", line.text.lower()).strip()


def heading_levels(lines: Sequence[Line], body: float) -> dict[float, int]:
    """Heading level per font size: sizes ≥ 1.15 × body ranked from the largest, capped at 4."""
    sizes = sorted(
        {ln.size for ln in lines if ln.size >= HEADING_RATIO * body and _headline(ln)},
        reverse=True,
    )
    return {size: min(rank + 1, 4) for rank, size in enumerate(sizes)}


def _headline(line: Line) -> bool:
    text = line.text.strip()
    return len(text) <= MAX_HEADING_CHARS and bool(_LETTER.search(text))


def heading_level(line: Line, body: float, levels: dict[float, int]) -> int:
    """The line's heading level, or 0 for body text."""
    if not _headline(line):
        return 0
    if line.size in levels:
        return levels[line.size]
    bold_label = line.bold and abs(line.size - body) < 0.5 and len(line.text) <= 100
    if bold_label and not line.text.rstrip().endswith((",", ";")):
        return min(len(levels) + 1, 4)
    return 0


def build_blocks(pages: Sequence[Sequence[Item]]) -> list[Block]:
    """Blocks of the whole document in reading order (paragraphs continue across pages)."""
    skipped = running_lines(pages)
    kept = [[i for i in items if i not in skipped] for items in pages if not is_toc_page(items)]
    lines = [i for items in kept for i in items if isinstance(i, Line)]
    body = body_size(lines)
    levels = heading_levels(lines, body)
    body_mono = sum(ln.chars for ln in lines if ln.mono) > 0.5 * sum(ln.chars for ln in lines)
    builder = ParagraphBuilder(body)
    for items in kept:
        for item in items:
            if isinstance(item, TableItem):
                builder.table(item.text, item.page)
                continue
            level = heading_level(item, body, levels)
            if level:
                builder.heading(item, level)
            elif item.mono and not body_mono:
                builder.code(item)
            else:
                builder.text(item)
    return builder.blocks()
