"""What parsing produces and what chunking hands to post-processing (all picklable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

BlockKind = Literal["heading", "text", "table", "code"]


@dataclass(frozen=True, slots=True)
class Block:
    """A heading, paragraph, Markdown table or fenced code block, with its page(s) if known."""

    kind: BlockKind
    text: str
    level: int = 0  # heading level 1..6
    pages: tuple[int, ...] = ()  # 1-based pages (PDF) or slides (PPTX)


@dataclass(frozen=True, slots=True)
class ProseDocument:
    """Unstructured text as Markdown-like blocks (md, txt, rst, html, pdf, docx, pptx)."""

    blocks: tuple[Block, ...]
    title: str = ""
    page_label: str = "p."  # "p." for PDF pages, "slide" for PPTX
    paged: bool = False  # locators are pages rather than heading paths


@dataclass(frozen=True, slots=True)
class TableDocument:
    """A CSV/TSV file: a header and its rows."""

    name: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class TreeDocument:
    """A JSON or YAML document (YAML files may hold several)."""

    name: str
    label: str  # "JSON" / "YAML"
    roots: tuple[Any, ...]


ParsedDocument = ProseDocument | TableDocument | TreeDocument

DraftKind = Literal["prose", "row", "item"]


@dataclass(frozen=True, slots=True)
class Draft:
    """A chunk before ids: searched text, handed-over text, and where it came from."""

    semantic_text: str
    raw_content: str
    kind: DraftKind = "prose"
    section: tuple[str, ...] = ()  # heading path
    pages: tuple[int, ...] = ()
    locator: str = ""

    @property
    def structured(self) -> bool:
        """Rows and items keep dual storage: never merged or prefixed."""
        return self.kind != "prose"
