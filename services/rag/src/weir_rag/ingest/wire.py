"""JSON encoding of parsed documents between the parser process and the service.

JSON rather than pickle: the parser handles untrusted files, so nothing it sends back may
be able to run code in the service.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict
from typing import Any

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.model import Block, ParsedDocument, ProseDocument, TableDocument, TreeDocument

FRAME = struct.Struct(">Q")  # length prefix of every message on the worker's pipes


def encode_result(doc: ParsedDocument | None, error: str | None = None) -> bytes:
    """A parsed document, or the reason it could not be parsed."""
    if error is not None:
        return json.dumps({"error": error}).encode()
    assert doc is not None
    kind = {ProseDocument: "prose", TableDocument: "table", TreeDocument: "tree"}[type(doc)]
    return json.dumps({"kind": kind, **asdict(doc)}, ensure_ascii=False, default=str).encode()


def decode_result(payload: bytes) -> ParsedDocument:
    """The document; raises IngestError when the parser reported one."""
    data: dict[str, Any] = json.loads(payload)
    if "error" in data:
        raise IngestError(str(data["error"]))
    kind = data.pop("kind")
    if kind == "prose":
        blocks = tuple(
            Block(b["kind"], b["text"], b["level"], tuple(b["pages"])) for b in data["blocks"]
        )
        return ProseDocument(blocks, data["title"], data["page_label"], data["paged"])
    if kind == "table":
        rows = tuple(tuple(r) for r in data["rows"])
        return TableDocument(data["name"], tuple(data["header"]), rows)
    return TreeDocument(data["name"], data["label"], tuple(data["roots"]))
