"""The text cleaner (NFKC, control characters, page-number lines, whitespace)."""

from __future__ import annotations

import pytest

from weir_rag.ingest.cleaner import clean_block, clean_blocks, clean_text
from weir_rag.ingest.model import Block

pytestmark = pytest.mark.unit


def test_nfkc_and_control_characters() -> None:
    assert clean_text("Ｆｕｌｌ\u00a0width ﬁle\x00\x07 ok") == "Full width file ok"
    assert clean_text("tab\tand\nnewline") == "tab and\nnewline"


@pytest.mark.parametrize("line", ["12", "- 12 -", "Page 3 of 10", "p. 7", "第 3 页", " 3/12 "])
def test_page_number_lines_are_removed(line: str) -> None:
    assert clean_text(f"before\n{line}\nafter") == "before\nafter"


def test_numbers_inside_text_stay() -> None:
    assert clean_text("Chapter 12 starts on page 3.\n2024") == "Chapter 12 starts on page 3."
    assert clean_text("Revenue: 12 million") == "Revenue: 12 million"


def test_whitespace_is_normalised() -> None:
    assert clean_text("  a   b \n\n\n\n c\u3000d  ") == "a b\n\nc d"


def test_code_keeps_its_spacing_and_tables_their_layout() -> None:
    code = Block("code", "```\nif x:\n    return  1\x00\n```")
    assert clean_block(code).text == "```\nif x:\n    return  1\n```"
    table = Block("table", "| ａ | b |\n| --- | --- |")
    assert clean_block(table).text == "| a | b |\n| --- | --- |"


def test_blocks_left_empty_are_dropped() -> None:
    blocks = (Block("text", "Real text."), Block("text", "- 4 -"), Block("heading", "H", 1))
    assert [b.text for b in clean_blocks(blocks)] == ["Real text.", "H"]
