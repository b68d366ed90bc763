"""A pdfplumber page → items (lines and Markdown tables) in reading order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from weir_rag.ingest.markdown import table_to_markdown
from weir_rag.ingest.pdf_layout import Line, column_of, page_lines


@dataclass(frozen=True, slots=True)
class TableItem:
    """A table found by pdfplumber, already rendered as Markdown."""

    text: str
    top: float
    column: tuple[int, int]
    page: int


Item = Line | TableItem


def _unstack(row: Sequence[str | None]) -> list[list[str]]:
    """A row whose filled cells all hold n lines is n rows drawn without separating rules."""
    lines = [(c or "").split("\n") for c in row]
    counts = {len(parts) for parts, c in zip(lines, row, strict=True) if c}
    if len(counts) == 1 and (n := counts.pop()) > 1:
        return [[parts[i] if len(parts) == n else "" for parts in lines] for i in range(n)]
    return [[c or "" for c in row]]


def _clean_rows(rows: Sequence[Sequence[str | None]]) -> list[list[str]]:
    """Cell text on one line; rows and columns that are empty everywhere are dropped."""
    split = [r for row in rows for r in _unstack(row)]
    cells = [[" ".join(c.split()) for c in row] for row in split]
    cells = [r for r in cells if any(r)]
    if not cells:
        return []
    keep = [i for i in range(len(cells[0])) if any(i < len(r) and r[i] for r in cells)]
    return [[r[i] if i < len(r) else "" for i in keep] for r in cells]


def page_items(page: Any, number: int) -> list[Item]:
    """Tables (as Markdown) and text lines outside them, ordered column by column per band."""
    page = page.within_bbox(page.bbox)  # text placed outside the page box is not shown
    tables = page.find_tables()
    boxes = [t.bbox for t in tables]

    def keep(obj: dict[str, Any]) -> bool:
        if obj.get("object_type") == "char" and not obj.get("upright", True):
            return False  # vertical margin notes would break into one-letter lines
        cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)

    text_page = page.filter(keep)
    words = text_page.extract_words(
        x_tolerance=1.5, y_tolerance=2, extra_attrs=["size", "fontname"]
    )
    lines, n_columns = page_lines(words, number)
    gutters = _gutters_from(lines, n_columns)
    items: list[Item] = list(lines)
    for table in tables:
        rows = _clean_rows(table.extract())
        if rows:
            x0, top, x1, _ = table.bbox
            column = (column_of(x0, gutters), column_of(x1, gutters))
            items.append(TableItem(table_to_markdown(rows), top, column, number))
    return reading_order(items, n_columns)


def _gutters_from(lines: Sequence[Line], n_columns: int) -> list[float]:
    """Approximate gutter positions back from the lines' column extents."""
    gutters: list[float] = []
    for col in range(n_columns - 1):
        right = [ln.x1 for ln in lines if ln.column == (col, col)]
        left = [ln.x0 for ln in lines if ln.column == (col + 1, col + 1)]
        if right and left:
            gutters.append((max(right) + min(left)) / 2)
    return gutters


def reading_order(items: Sequence[Item], n_columns: int) -> list[Item]:
    """Items that span columns cut the page into bands; within a band, column by column."""
    spanning = sorted(
        (i for i in items if i.column[0] != i.column[1] or n_columns == 1), key=lambda i: i.top
    )
    if n_columns == 1:
        return spanning
    bands: list[list[Item]] = [[] for _ in range(len(spanning) + 1)]
    for item in items:
        if item.column[0] == item.column[1]:
            bands[sum(1 for s in spanning if s.top <= item.top)].append(item)
    ordered: list[Item] = []
    for index, band in enumerate(bands):
        ordered.extend(sorted(band, key=lambda i: (i.column[0], i.top)))
        if index < len(spanning):
            ordered.append(spanning[index])
    return ordered
