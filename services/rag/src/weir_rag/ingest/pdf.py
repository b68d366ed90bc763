"""PDF loading with pdfplumber: structure extraction, plain-text fallback, clear errors."""

from __future__ import annotations

import io
import re
from typing import Any

import pdfplumber
import structlog
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfplumber.utils.exceptions import PdfminerException

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.model import Block, ProseDocument
from weir_rag.ingest.pdf_page import page_items
from weir_rag.ingest.pdf_structure import build_blocks

log = structlog.get_logger(__name__)
_MEANINGFUL = re.compile(r"[^\W_]")
_FILE_NAME = re.compile(r"\.[A-Za-z0-9]{2,4}$")
MIN_TEXT_CHARS = 20


def _open(data: bytes) -> Any:
    if b"%PDF" not in data[:1024]:
        raise IngestError("the file is not a PDF (no %PDF header)")
    try:
        return pdfplumber.open(io.BytesIO(data))
    except PdfminerException as exc:
        raise _reason(exc) from exc
    except (PDFPasswordIncorrect, PDFEncryptionError) as exc:
        raise IngestError("the PDF is encrypted (password-protected)") from exc
    except Exception as exc:
        raise IngestError(f"the PDF is damaged: {_short(exc)}") from exc


def _reason(exc: PdfminerException) -> IngestError:
    cause = exc.args[0] if exc.args else exc
    if isinstance(cause, (PDFPasswordIncorrect, PDFEncryptionError)):
        return IngestError("the PDF is encrypted (password-protected)")
    return IngestError(f"the PDF is damaged: {_short(cause)}")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def load_pdf(data: bytes, structured: bool = True) -> ProseDocument:
    """Blocks with page numbers; structure from layout, or plain text per page as fallback."""
    with _open(data) as pdf:
        title = _title(pdf.metadata or {})
        try:
            pages = list(pdf.pages)
        except PdfminerException as exc:
            raise _reason(exc) from exc
        blocks: list[Block] = []
        if structured:
            try:
                blocks = build_blocks([page_items(p, n) for n, p in enumerate(pages, start=1)])
            except Exception as exc:  # any layout failure: the plain text may still be fine
                log.warning("ingest.pdf.structure_failed", error=_short(exc), fallback="plain")
        if not _has_text(blocks):
            blocks = _plain(pages)
        if not _has_text(blocks):
            raise _why_empty(pages)
    return ProseDocument(tuple(blocks), title=title, page_label="p.", paged=True)


def _title(metadata: dict[str, Any]) -> str:
    """The document title from the PDF metadata, unless it is a file name or a placeholder."""
    title = " ".join(str(metadata.get("Title") or "").split())
    title = re.sub(r"^Microsoft (Word|PowerPoint) - ", "", title)
    if _FILE_NAME.search(title) or title.lower() in {"untitled", "title"}:
        return ""
    return title


def _plain(pages: list[Any]) -> list[Block]:
    """pdfplumber's own text per page (reading order as laid out, no structure)."""
    blocks = []
    for number, page in enumerate(pages, start=1):
        try:
            text = page.within_bbox(page.bbox).extract_text() or ""
        except PdfminerException as exc:
            raise _reason(exc) from exc
        if text.strip():
            blocks.append(Block("text", text, pages=(number,)))
    return blocks


def _has_text(blocks: list[Block]) -> bool:
    return sum(len(_MEANINGFUL.findall(b.text)) for b in blocks) >= MIN_TEXT_CHARS


def _why_empty(pages: list[Any]) -> IngestError:
    outside = sum(len(p.chars) for p in pages)
    if outside:
        return IngestError(
            "the PDF is damaged: its text lies outside the page area (invalid page box)"
        )
    if any(p.images for p in pages):
        return IngestError("the PDF has no text layer (scanned pages would need OCR)")
    return IngestError("the PDF contains no text")
