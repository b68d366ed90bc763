"""Flat records of chunks, as the engines store them (owner ``""`` means shared)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from weir_common.search.documents import Chunk, Scope

#: Fields every engine stores beside the text, so a hit rebuilds the whole chunk.
RECORD_FIELDS = ("chunk_id", "document_id", "source", "locator", "collection", "owner",
                 "semantic_text", "raw_content", "chunk_index", "metadata")  # fmt: skip
_SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,80}")


def to_record(chunk: Chunk) -> dict[str, Any]:
    """The chunk as a flat dict (metadata as a JSON string, owner ``""`` when shared)."""
    return {
        "chunk_id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "source": chunk.source,
        "locator": chunk.locator,
        "collection": chunk.collection,
        "owner": chunk.owner or "",
        "semantic_text": chunk.semantic_text,
        "raw_content": chunk.raw_content,
        "chunk_index": chunk.chunk_index,
        "metadata": json.dumps(chunk.metadata, ensure_ascii=False, sort_keys=True),
    }


def from_record(record: dict[str, Any]) -> Chunk:
    """Rebuild a chunk from :func:`to_record`'s dict (as returned by an engine)."""
    raw_meta = record.get("metadata") or "{}"
    metadata = json.loads(raw_meta) if isinstance(raw_meta, str) else dict(raw_meta)
    return Chunk(
        chunk_id=str(record["chunk_id"]),
        document_id=str(record["document_id"]),
        source=str(record.get("source", "")),
        collection=str(record["collection"]),
        owner=str(record.get("owner") or "") or None,
        semantic_text=str(record.get("semantic_text", "")),
        raw_content=str(record.get("raw_content", "")),
        locator=str(record.get("locator", "")),
        chunk_index=int(record.get("chunk_index", 0)),
        metadata={str(k): str(v) for k, v in metadata.items()},
    )


def visible_owners(scope: Scope) -> list[str]:
    """Owner values a search in ``scope`` may see: shared (``""``) plus the user's own."""
    return ["", scope.user_id] if scope.user_id else [""]


def safe_name(collection: str) -> str:
    """A file- and index-name-safe form of a collection name (injective: hashed if unsafe)."""
    lowered = collection.lower()
    if lowered == collection and _SAFE_NAME.fullmatch(collection):
        return collection
    digest = hashlib.sha256(collection.encode()).hexdigest()[:16]
    prefix = re.sub(r"[^a-z0-9]+", "-", lowered)[:40].strip("-") or "c"
    return f"{prefix}-{digest}"
