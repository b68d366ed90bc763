"""Markdown text → blocks (ATX headings, fenced code, pipe tables, paragraphs); reST headings."""

from __future__ import annotations

import re

from weir_rag.ingest.model import Block

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


def parse_markdown(text: str) -> list[Block]:
    """Split Markdown into blocks; code fences stay whole, tables are runs of `|` lines."""
    blocks: list[Block] = []
    para: list[str] = []
    lines = text.splitlines()
    i = 0

    def flush() -> None:
        if any(line.strip() for line in para):
            table = all(ln.lstrip().startswith("|") for ln in para)
            blocks.append(Block("table" if table else "text", "\n".join(para).strip("\n")))
        para.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            end = _closing_fence(lines, i, fence.group(1))
            blocks.append(Block("code", "\n".join(lines[i : end + 1])))
            i = end + 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            blocks.append(Block("heading", heading.group(2), level=len(heading.group(1))))
        elif not line.strip():
            flush()
        elif para and _is_table(para) != line.lstrip().startswith("|"):
            flush()
            para.append(line)
        else:
            para.append(line)
        i += 1
    flush()
    return blocks


def _is_table(para: list[str]) -> bool:
    return para[-1].lstrip().startswith("|")


def _closing_fence(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing the fence opened at `start` (the last line if unclosed)."""
    for j in range(start + 1, len(lines)):
        if lines[j].strip().startswith(fence[0] * len(fence)):
            return j
    return len(lines) - 1


def rst_to_markdown(text: str) -> str:
    """Turn reST section titles (underlined, optionally overlined) into ATX headings.

    reST has no fixed characters per level: levels follow the order the styles first appear.
    """
    lines = text.splitlines()
    styles: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _RST_UNDERLINE.match(line) and i + 2 < len(lines) and lines[i + 2] == line:
            i += 1  # an overline: the title and its underline follow
            continue
        if line.strip() and _RST_UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()):
            style = nxt.strip()[0]
            if style not in styles:
                styles.append(style)
            out.append("#" * min(styles.index(style) + 1, 6) + " " + line.strip())
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def table_to_markdown(rows: list[list[str]]) -> str:
    """A Markdown pipe table; the first row is the header. Cell newlines become spaces."""
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return ""
    cells = [[_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in cells[1:]]
    return "\n".join(lines)


def _cell(value: str | None) -> str:
    return " ".join((value or "").split()).replace("|", "\\|")
