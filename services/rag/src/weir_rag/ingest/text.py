"""Plain-text formats: decoding bytes, and md / txt / rst as prose."""

from __future__ import annotations

import re

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.markdown import parse_markdown, rst_to_markdown
from weir_rag.ingest.model import Block, ProseDocument

_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (with or without BOM), UTF-16 with BOM, else GB18030; never Latin-1 guesses.

    A NUL byte in 8-bit text means a binary file under a text name.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    if b"\x00" in data[:8192]:
        raise IngestError("the file is not text (it contains binary data)")
    for codec in ("utf-8", "gb18030"):
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def load_markdown(data: bytes) -> ProseDocument:
    """Markdown as written."""
    return ProseDocument(tuple(parse_markdown(decode_text(data))))


def load_plain(data: bytes) -> ProseDocument:
    """Plain text: paragraphs separated by blank lines (no Markdown syntax is interpreted)."""
    paragraphs = _BLANK_LINES.split(decode_text(data))
    return ProseDocument(tuple(Block("text", p.strip("\n")) for p in paragraphs if p.strip()))


def load_rst(data: bytes) -> ProseDocument:
    """reST: section titles become headings; the rest is kept as text."""
    return ProseDocument(tuple(parse_markdown(rst_to_markdown(decode_text(data)))))
