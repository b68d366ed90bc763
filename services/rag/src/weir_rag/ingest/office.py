"""Office files: DOCX (paragraphs in order, heading styles, tables → Markdown), PPTX (slides)."""

from __future__ import annotations

import io
import re
import zipfile

import docx
import pptx
from docx.table import Table
from docx.text.paragraph import Paragraph

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.markdown import table_to_markdown
from weir_rag.ingest.model import Block, ProseDocument

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _open_zip(data: bytes, what: str) -> io.BytesIO:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise IngestError(f"the {what} file is damaged: it is not a valid Office (ZIP) package")
    return io.BytesIO(data)


def load_docx(data: bytes) -> ProseDocument:
    """Paragraphs and tables in document order; "Heading N" and "Title" styles are headings."""
    document = docx.Document(_open_zip(data, "DOCX"))
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            if rows:
                blocks.append(Block("table", table_to_markdown(rows)))
        elif isinstance(item, Paragraph) and item.text.strip():
            blocks.append(_paragraph(item))
    return ProseDocument(tuple(blocks), title=document.core_properties.title or "")


def _paragraph(par: Paragraph) -> Block:
    style = (par.style.name if par.style is not None else "") or ""
    text = par.text.strip()
    if style.lower() == "title":
        return Block("heading", text, level=1)
    match = _HEADING_STYLE.match(style)
    if match:
        return Block("heading", text, level=min(int(match.group(1)), 6))
    if style.lower().startswith("list"):
        return Block("text", "- " + text)
    return Block("text", text)


def load_pptx(data: bytes) -> ProseDocument:
    """One section per slide: its title as a heading, then its text frames and tables."""
    deck = pptx.Presentation(_open_zip(data, "PPTX"))
    blocks: list[Block] = []
    for number, slide in enumerate(deck.slides, start=1):
        pages = (number,)
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None else ""
        blocks.append(Block("heading", title or f"Slide {number}", level=1, pages=pages))
        for shape in slide.shapes:
            if shape is title_shape:
                continue
            if shape.has_text_frame and shape.text_frame.text.strip():
                lines = [p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]
                blocks.append(Block("text", "\n".join(lines), pages=pages))
            elif getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                blocks.append(Block("table", table_to_markdown(rows), pages=pages))
    title = deck.core_properties.title or ""
    return ProseDocument(tuple(blocks), title=title, page_label="slide", paged=True)
