"""PDF structure rules on synthetic lines: monospace code, TOC pages, running heads, levels."""

from __future__ import annotations

import pytest

from weir_rag.ingest.pdf_layout import Line
from weir_rag.ingest.pdf_page import Item
from weir_rag.ingest.pdf_structure import build_blocks, is_toc_page

pytestmark = pytest.mark.unit


def line(
    text: str, top: float, page: int = 1, *, size: float = 10.0, x0: float = 50.0,
    bold: bool = False, mono: bool = False,
) -> Line:  # fmt: skip
    return Line(
        text=text, size=size, largest=size, bold=bold, mono=mono, top=top, bottom=top + size,
        x0=x0, x1=x0 + 6 * len(text), column=(0, 0), page=page, chars=len(text),
    )  # fmt: skip


def body(page: int, start: float, n: int) -> list[Item]:
    return [
        line(f"Body text line {i} of page {page} goes on and on", start + 12 * i, page)
        for i in range(n)
    ]


def test_heading_levels_by_size_rank_and_bold() -> None:
    page: list[Item] = [
        line("Big Title", 10, size=24),
        line("Chapter", 50, size=16),
        *body(1, 80, 3),
        line("Bold label line", 130, bold=True),
        *body(1, 150, 3),
    ]
    headings = [(b.level, b.text) for b in build_blocks([page]) if b.kind == "heading"]
    assert headings == [(1, "Big Title"), (2, "Chapter"), (3, "Bold label line")]


def test_monospace_runs_become_code_fences_with_indentation() -> None:
    page: list[Item] = [
        *body(1, 10, 4),
        line("def main():", 70, mono=True),
        line("return 1", 82, mono=True, x0=50 + 4 * 6.0),
        *body(1, 100, 2),
    ]
    code = [b.text for b in build_blocks([page]) if b.kind == "code"]
    assert code == ["```\ndef main():\n    return 1\n```"]


def test_monospace_body_is_not_code() -> None:
    page: list[Item] = [
        line(f"{i} THE COURT: line {i} of the transcript", 10 + 12 * i, mono=True) for i in range(8)
    ]
    assert {b.kind for b in build_blocks([page])} == {"text"}


def test_toc_pages_are_skipped() -> None:
    toc: list[Item] = [line(f"Section {i} .......... {i * 3}", 10 + 12 * i) for i in range(8)]
    assert is_toc_page(toc)
    blocks = build_blocks([toc, body(2, 10, 3)])
    assert not any("Section 1 ...." in b.text for b in blocks)
    assert blocks[0].pages == (2,)


def test_running_heads_are_dropped_and_paragraphs_continue_across_pages() -> None:
    pages: list[list[Item]] = []
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    for p in range(1, 5):
        lines: list[Item] = [line(f"ACME Annual Report {2020 + p}", 5, p)]
        lines += [line(f"{words[p + i]} is the word of line {i}", 30 + 12 * i, p) for i in range(3)]
        pages.append(lines)
    blocks = build_blocks(pages)
    assert not any("ACME" in b.text for b in blocks)
    assert len(blocks) == 1
    assert blocks[0].pages == (1, 2, 3, 4)
