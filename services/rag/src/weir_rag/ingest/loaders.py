"""Pick the loader by file name or content type and parse bytes into a document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.html import load_html
from weir_rag.ingest.model import ParsedDocument
from weir_rag.ingest.office import load_docx, load_pptx
from weir_rag.ingest.pdf import load_pdf
from weir_rag.ingest.tabular import load_csv, load_json, load_yaml
from weir_rag.ingest.text import load_markdown, load_plain, load_rst

FORMATS: dict[str, str] = {
    ".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt", ".log": "txt",
    ".rst": "rst", ".html": "html", ".htm": "html", ".csv": "csv", ".tsv": "csv",
    ".json": "json", ".jsonl": "json", ".yaml": "yaml", ".yml": "yaml", ".pdf": "pdf",
    ".docx": "docx", ".pptx": "pptx",
}  # fmt: skip
CONTENT_TYPES: dict[str, str] = {
    "text/markdown": "md", "text/plain": "txt", "text/x-rst": "rst", "text/html": "html",
    "text/csv": "csv", "text/tab-separated-values": "csv", "application/json": "json",
    "application/yaml": "yaml", "application/x-yaml": "yaml", "text/yaml": "yaml",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
}  # fmt: skip
STRUCTURED = frozenset({"csv", "json", "yaml"})


def detect_format(source: str, content_type: str | None = None) -> str:
    """The format key ("pdf", "md", …) from the file extension, else from the content type."""
    suffix = PurePosixPath(source.replace("\\", "/")).suffix.lower()
    if suffix in FORMATS:
        return FORMATS[suffix]
    media = (content_type or "").split(";")[0].strip().lower()
    if media in CONTENT_TYPES:
        return CONTENT_TYPES[media]
    raise IngestError(f"unsupported file type: {suffix or media or 'unknown'}")


def parse_document(data: bytes, fmt: str, source: str, structure_pdf: bool) -> ParsedDocument:
    """Parse bytes of a known format; raises IngestError for empty or unreadable files."""
    if not data.strip():
        raise IngestError("the file is empty")
    by_name: dict[str, Callable[[], ParsedDocument]] = {
        "md": lambda: load_markdown(data),
        "txt": lambda: load_plain(data),
        "rst": lambda: load_rst(data),
        "html": lambda: load_html(data),
        "csv": lambda: load_csv(data, source),
        "json": lambda: load_json(data, source),
        "yaml": lambda: load_yaml(data, source),
        "pdf": lambda: load_pdf(data, structured=structure_pdf),
        "docx": lambda: load_docx(data),
        "pptx": lambda: load_pptx(data),
    }
    if fmt not in by_name:
        raise IngestError(f"unsupported file type: {fmt}")
    return by_name[fmt]()
