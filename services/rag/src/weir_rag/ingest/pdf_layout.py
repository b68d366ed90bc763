"""One PDF page → lines in reading order: column gutters found from empty vertical strips.

pdfplumber orders text top to bottom across the whole page, which interleaves the columns of
a multi-column layout. Here words are grouped into rows, rows that cross a gutter (titles,
running heads) stay whole and separate bands, and within a band column 1 is read before 2.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Word = dict[str, Any]
_BOLD = ("bold", "black", "heavy", "semibold", "demi")
_MONO = ("courier", "mono", "consola", "menlo", "typewriter", "fixed", "inconsolata", "code")
_MIN_GUTTER_PT = 6.0
_MIN_COLUMN_SHARE = 0.08


@dataclass(frozen=True, slots=True)
class Line:
    """A line of text in one column (or across all of them), with its dominant style."""

    text: str
    size: float  # the size carrying most characters
    largest: float
    bold: bool
    mono: bool
    top: float
    bottom: float
    x0: float
    x1: float
    column: tuple[int, int]  # first and last column the line covers
    page: int
    chars: int


def _is(fontname: str, marks: Sequence[str]) -> bool:
    name = fontname.lower()
    return any(m in name for m in marks)


def _dominant_size(words: Sequence[Word]) -> float:
    sizes: dict[float, int] = {}
    for w in words:
        size = round(float(w["size"]) * 2) / 2
        sizes[size] = sizes.get(size, 0) + len(w["text"])
    return max(sizes, key=lambda s: sizes[s])


def make_line(words: Sequence[Word], column: tuple[int, int], page: int) -> Line:
    """Join words left to right; a style share of ≥ 60% of the characters marks the line.

    Footnote markers (digits set clearly smaller than the line) are dropped: "alert,5and".
    """
    size = _dominant_size(words)
    kept = [w for w in words if not (w["text"].isdigit() and float(w["size"]) < 0.8 * size)]
    ordered = sorted(kept or words, key=lambda w: w["x0"])
    parts = [ordered[0]["text"]]
    for prev, word in itertools.pairwise(ordered):
        glued = word["x0"] - prev["x1"] < 0.1 * float(word["size"])
        parts.append(word["text"] if glued else " " + word["text"])
    total = sum(len(w["text"]) for w in ordered)
    bold = sum(len(w["text"]) for w in ordered if _is(w["fontname"], _BOLD))
    mono = sum(len(w["text"]) for w in ordered if _is(w["fontname"], _MONO))
    return Line(
        text="".join(parts),
        size=size,
        largest=max(float(w["size"]) for w in ordered),
        bold=bold >= 0.6 * total,
        mono=mono >= 0.6 * total,
        top=min(w["top"] for w in ordered),
        bottom=max(w["bottom"] for w in ordered),
        x0=ordered[0]["x0"],
        x1=max(w["x1"] for w in ordered),
        column=column,
        page=page,
        chars=total,
    )


def rows_of(words: Sequence[Word]) -> list[list[Word]]:
    """Group words into rows: a word joins the row whose first word it overlaps vertically."""
    rows: list[list[Word]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        for row in reversed(rows[-8:]):
            anchor = row[0]
            overlap = min(anchor["bottom"], word["bottom"]) - max(anchor["top"], word["top"])
            height = min(anchor["bottom"] - anchor["top"], word["bottom"] - word["top"])
            if overlap >= 0.5 * height:
                row.append(word)
                break
        else:
            rows.append([word])
    return rows


def find_gutters(words: Sequence[Word], n_rows: int) -> list[float]:
    """Centres of vertical strips (≥ 6 pt) that almost no word covers, between text columns."""
    if not words:
        return []
    left, right = int(min(w["x0"] for w in words)), int(max(w["x1"] for w in words)) + 1
    coverage = [0] * (right - left + 1)
    for w in words:
        for x in range(int(w["x0"]) - left, int(w["x1"]) - left + 1):
            coverage[x] += 1
    allowance = max(1, int(0.15 * n_rows))
    gutters: list[float] = []
    start: int | None = None
    for x, count in enumerate(coverage):
        if count <= allowance and start is None:
            start = x
        elif count > allowance and start is not None:
            if x - start >= _MIN_GUTTER_PT and start > 0:
                gutters.append(left + (start + x) / 2)
            start = None
    return _keep_real_columns(words, gutters)


def _keep_real_columns(words: Sequence[Word], gutters: list[float]) -> list[float]:
    """Drop gutters beside a column that holds too few words to be a column (a stray gap)."""
    while gutters:
        counts = [0] * (len(gutters) + 1)
        for w in words:
            counts[column_of((w["x0"] + w["x1"]) / 2, gutters)] += len(w["text"])
        smallest = min(range(len(counts)), key=counts.__getitem__)
        if counts[smallest] >= _MIN_COLUMN_SHARE * sum(counts):
            break
        drop = min(smallest, len(gutters) - 1)
        gutters = gutters[:drop] + gutters[drop + 1 :]
    return gutters


def column_of(x: float, gutters: Sequence[float]) -> int:
    """Index of the column that contains x."""
    return sum(1 for g in gutters if x > g)


def _spans(row: Sequence[Word], gutters: Sequence[float]) -> bool:
    return any(w["x0"] < g < w["x1"] for w in row for g in gutters)


def page_lines(words: Sequence[Word], page: int) -> tuple[list[Line], int]:
    """Lines of one page (unordered) and the number of columns found."""
    rows = rows_of(words)
    gutters = find_gutters(words, len(rows))
    last = len(gutters)
    lines: list[Line] = []
    by_column: dict[int, list[Word]] = {}
    for row in rows:
        if _spans(row, gutters):
            lines.append(make_line(row, (0, last), page))
            continue
        for w in row:
            by_column.setdefault(column_of((w["x0"] + w["x1"]) / 2, gutters), []).append(w)
    for col, col_words in by_column.items():
        lines.extend(make_line(r, (col, col), page) for r in rows_of(col_words))
    return lines, last + 1
