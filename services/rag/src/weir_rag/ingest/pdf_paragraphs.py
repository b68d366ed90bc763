"""Assemble PDF lines into headings, paragraphs, notes and code blocks.

A paragraph left open at the end of a column or page (no closing punctuation) continues
with the next body line, even when footnotes or a running head came in between.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from weir_common.search.text import CJK, CJK_PUNCTUATION, FULLWIDTH, HANGUL, KANA
from weir_rag.ingest.model import Block
from weir_rag.ingest.pdf_layout import Line

_BULLET = re.compile(r"^\s*([•▪●◦‣∙·\-–*]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s")
_TERMINAL = tuple('.!?。！？:;…"”')
# Wider than the ideographs on purpose: Japanese, Korean and fullwidth punctuation wrap
# without spaces too, so no space is put between two such characters when lines are joined.
_NO_SPACE = re.compile(f"[{CJK_PUNCTUATION}{KANA}{CJK}{HANGUL}{FULLWIDTH}]")
NOTE_RATIO = 0.85

EntryKind = Literal["heading", "text", "note", "code", "table"]


@dataclass
class _Entry:
    kind: EntryKind
    text: str
    level: int = 0
    lines: list[Line] = field(default_factory=list)
    pages: set[int] = field(default_factory=set)

    @property
    def last(self) -> Line | None:
        return self.lines[-1] if self.lines else None

    def add(self, line: Line) -> None:
        if self.lines:
            self.text = join_lines(self.text, line.text)
        else:
            self.text = line.text
        self.lines.append(line)
        self.pages.add(line.page)


def join_lines(left: str, right: str) -> str:
    """Join two wrapped lines: undo end-of-line hyphenation, no space between CJK characters."""
    left, right = left.rstrip(), right.lstrip()
    if not left or not right:
        return left + right
    if left.endswith("-") and left[-2:-1].isalpha() and right[0].islower():
        return left[:-1] + right
    if _NO_SPACE.match(left[-1]) and _NO_SPACE.match(right[0]):
        return left + right
    return left + " " + right


def _adjacent(prev: Line, line: Line) -> bool:
    """Next line of the same column and page, with no blank line in between."""
    gap = line.top - prev.bottom
    return line.page == prev.page and line.column == prev.column and -2 <= gap <= 0.9 * line.size


class ParagraphBuilder:
    """Collects entries; `blocks()` renders them."""

    def __init__(self, body_size: float) -> None:
        self._body = body_size
        self._entries: list[_Entry] = []
        self._open: _Entry | None = None  # the body paragraph that may continue

    def _current(self) -> _Entry | None:
        return self._entries[-1] if self._entries else None

    def _start(self, kind: EntryKind, line: Line, level: int = 0) -> _Entry:
        entry = _Entry(kind, "", level)
        entry.add(line)
        self._entries.append(entry)
        return entry

    def heading(self, line: Line, level: int) -> None:
        """A heading line; consecutive lines of one heading merge."""
        cur = self._current()
        last = cur.last if cur else None
        if cur and last and cur.kind == "heading" and cur.level == level and _adjacent(last, line):
            cur.add(line)
        else:
            self._start("heading", line, level)
        self._open = None

    def code(self, line: Line) -> None:
        """A monospace line (when the body is not monospace)."""
        cur = self._current()
        if cur and cur.kind == "code" and cur.last and cur.last.page == line.page:
            cur.lines.append(line)
        else:
            self._start("code", line)
        self._open = None

    def table(self, markdown: str, page: int) -> None:
        """A table; one continued on the next page with the same header is appended to."""
        cur = self._current()
        head, _, rows = markdown.partition("\n")
        if cur and cur.kind == "table" and cur.text.partition("\n")[0] == head:
            cur.text += "\n" + rows.partition("\n")[2]
            cur.pages.add(page)
        else:
            self._entries.append(_Entry("table", markdown, pages={page}))
        self._open = None

    def text(self, line: Line) -> None:
        """A body or note line: continues the current paragraph or starts one."""
        kind: EntryKind = "note" if line.largest < NOTE_RATIO * self._body else "text"
        cur = self._current()
        if cur and cur.kind == kind and cur.last and _adjacent(cur.last, line):
            if not self._starts_paragraph(cur, line):
                cur.add(line)
                return
        elif kind == "text" and self._continues(line):
            assert self._open is not None
            self._open.add(line)
            return
        entry = self._start(kind, line)
        if kind == "text":
            self._open = entry

    def _starts_paragraph(self, entry: _Entry, line: Line) -> bool:
        prev = entry.lines[-1]
        if _BULLET.match(line.text):
            return True
        if line.x0 > prev.x0 + 0.8 * line.size and len(entry.lines) > 0:
            return True
        right = max(ln.x1 for ln in entry.lines)
        return prev.text.rstrip().endswith(_TERMINAL) and prev.x1 < right - 3 * line.size

    def _continues(self, line: Line) -> bool:
        """An open paragraph resumes after a column, page, or footnote break."""
        para = self._open
        if para is None or para.last is None or _BULLET.match(line.text):
            return False
        moved = para.last.page != line.page or para.last.column != line.column
        return moved and not para.text.rstrip().endswith(_TERMINAL)

    def blocks(self) -> list[Block]:
        """The entries as blocks, in order."""
        return [_render(e) for e in self._entries if e.text.strip() or e.kind == "code"]


def _render(entry: _Entry) -> Block:
    pages = tuple(sorted(entry.pages))
    if entry.kind == "heading":
        return Block("heading", entry.text.strip(), level=entry.level, pages=pages)
    if entry.kind == "code":
        base = min(ln.x0 for ln in entry.lines)
        body = "\n".join(
            " " * round((ln.x0 - base) / (0.6 * ln.size)) + ln.text for ln in entry.lines
        )
        return Block("code", f"```\n{body}\n```", pages=pages)
    if entry.kind == "table":
        return Block("table", entry.text, pages=pages)
    return Block("text", entry.text.strip(), pages=pages)
