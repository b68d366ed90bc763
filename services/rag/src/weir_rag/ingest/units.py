"""Units the Markdown chunker packs: sentences of paragraphs, whole tables, whole code blocks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from weir_rag.ingest.model import Block

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)|(?<=[。！？；])")


@dataclass(frozen=True, slots=True)
class Unit:
    """A piece that is never split by packing (a long text unit may be hard-split)."""

    text: str
    kind: str  # "heading" | "text" | "table" | "code"
    block: int  # index of the block it came from: units of one block join with a space
    pages: tuple[int, ...] = ()


def render_heading(block: Block) -> str:
    """A heading as a Markdown line."""
    return "#" * max(1, min(block.level, 6)) + " " + block.text


def split_sentences(text: str) -> list[str]:
    """Lines, then sentences (Latin and CJK end marks); empty pieces dropped."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def table_rows(table: str, max_chars: int) -> list[str]:
    """A table split into pieces of whole rows, each repeating the header and separator."""
    lines = table.split("\n")
    head, rows = lines[:2], lines[2:]
    pieces: list[str] = []
    current = list(head)
    for row in rows:
        if len(current) > 2 and len("\n".join([*current, row])) > max_chars:
            pieces.append("\n".join(current))
            current = list(head)
        current.append(row)
    pieces.append("\n".join(current))
    return pieces


def to_units(blocks: Sequence[Block], max_chars: int) -> list[Unit]:
    """Units of a section's blocks; text is split into sentences only when it is too long."""
    units: list[Unit] = []
    for index, block in enumerate(blocks):
        if block.kind == "heading":
            units.append(Unit(render_heading(block), "heading", index, block.pages))
        elif block.kind == "code" or len(block.text) <= max_chars // 2:
            units.append(Unit(block.text, block.kind, index, block.pages))
        elif block.kind == "table":
            units.extend(
                Unit(t, "table", index, block.pages) for t in table_rows(block.text, max_chars)
            )
        else:
            units.extend(Unit(s, "text", index, block.pages) for s in split_sentences(block.text))
    return units


def join_units(units: Sequence[Unit]) -> str:
    """Units of one block joined by a space, blocks by a blank line."""
    out = ""
    for prev, unit in zip([None, *units[:-1]], units, strict=True):
        if prev is None:
            out = unit.text
        elif prev.block == unit.block and unit.kind == "text":
            out += " " + unit.text
        else:
            out += "\n\n" + unit.text
    return out


def hard_split(text: str, max_chars: int, overlap: int) -> list[str]:
    """Windows of at most `max_chars`, cut at whitespace where possible, overlapping."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + max_chars, len(text))
        if end < len(text):
            space = text.rfind(" ", start + max_chars // 2, end)
            end = space if space > start else end
        pieces.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
        if text[start - 1] != " " and " " in text[start:end]:
            start = text.index(" ", start) + 1  # begin the overlap at a word
    return [p for p in pieces if p]
