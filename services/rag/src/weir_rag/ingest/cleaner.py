"""Text cleaning for unstructured text: NFKC, control characters, page-number lines, spaces.

Code blocks are only stripped of control characters (their spacing is meaningful); tables
keep their layout and get NFKC and control-character cleaning.
"""

from __future__ import annotations

import re
import unicodedata

from weir_rag.ingest.model import Block

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")
_PAGE_LINE = re.compile(
    r"^\s*(?:[-–—]\s*)?(?:(?:page|p\.|seite|página|第)\s*)?\d{1,5}"
    r"(?:\s*(?:/|of|von|de|sur)\s*\d{1,5})?(?:\s*页)?(?:\s*[-–—])?\s*$",
    re.IGNORECASE,
)
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANKS = re.compile(r"\n{3,}")


def clean_text(text: str) -> str:
    """NFKC → drop control characters (keep \\n, \\t) → drop page-number lines → whitespace."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    lines = [ln for ln in text.split("\n") if not _PAGE_LINE.match(ln)]
    lines = [_SPACES.sub(" ", ln).strip() for ln in lines]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def clean_block(block: Block) -> Block:
    """The block with its text cleaned according to its kind."""
    if block.kind == "code":
        text = _CONTROL.sub("", block.text.replace("\r\n", "\n"))
    elif block.kind == "table":
        text = _CONTROL.sub("", unicodedata.normalize("NFKC", block.text))
    else:
        text = clean_text(block.text)
    return Block(block.kind, text, block.level, block.pages)


def clean_blocks(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    """Every block cleaned; blocks left empty are dropped."""
    cleaned = (clean_block(b) for b in blocks)
    return tuple(b for b in cleaned if b.text.strip())
