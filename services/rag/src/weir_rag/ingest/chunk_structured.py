"""CSV rows and JSON/YAML items as chunks with dual storage.

`semantic_text` is a natural-language rendering that is embedded and searched
("[Table: servers] type m6i.2xlarge, cpu 8"); `raw_content` is what the model gets (the row
as a Markdown table with its header, or the item's original JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from weir_common.search.text import has_cjk
from weir_rag.ingest.markdown import table_to_markdown
from weir_rag.ingest.model import Draft, TableDocument, TreeDocument

Path = tuple[str, ...]


def _labels(sample: str) -> tuple[str, str, str, str]:
    """Words for "table" and "item", the field and the list-value separators, in the data's
    language."""
    return ("表格", "条目", "，", "、") if has_cjk(sample) else ("Table", "Item", ", ", " / ")


def chunk_rows(doc: TableDocument) -> list[Draft]:
    """One chunk per CSV row."""
    table, _, sep, _ = _labels(" ".join(doc.header) + " ".join(" ".join(r) for r in doc.rows[:20]))
    drafts = []
    for number, row in enumerate(doc.rows, start=2):  # row 1 is the header
        pairs = [f"{h} {v}" for h, v in zip(doc.header, row, strict=False) if v]
        if not pairs:
            continue
        semantic = f"[{table}: {doc.name}] " + sep.join(pairs)
        raw = table_to_markdown([list(doc.header), list(row)])
        drafts.append(Draft(semantic, raw, kind="row", locator=f"row {number}"))
    return drafts


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list)) or (
        isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)
    )


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _is_collection(node: dict[str, Any]) -> bool:
    """An object whose members are all objects or arrays: named items, not one record."""
    return bool(node) and all(
        isinstance(v, (dict, list)) and not _is_scalar(v) for v in node.values()
    )


def items(node: Any, path: Path, max_chars: int) -> Iterator[tuple[Path, Any]]:
    """Leaf expansion: array elements and members of collections become items; a record (an
    object with plain fields) that fits stays whole (one API operation or config entry), and
    the plain fields of a larger object form one item."""
    if isinstance(node, list) and not _is_scalar(node):
        for index, child in enumerate(node):
            yield from items(child, (*path, f"[{index}]"), max_chars)
    elif isinstance(node, dict):
        if path and not _is_collection(node) and _size(node) <= max_chars:
            yield path, node
            return
        scalars = {k: v for k, v in node.items() if _is_scalar(v)}
        if scalars:
            yield path, scalars
        for key, child in node.items():
            if not _is_scalar(child):
                yield from items(child, (*path, str(key)), max_chars)
    else:
        yield path, node


def _flatten(value: Any, joiner: str, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _flatten(child, joiner, f"{prefix} {key}".strip())
    elif isinstance(value, list) and not _is_scalar(value):
        for index, child in enumerate(value):
            yield from _flatten(child, joiner, f"{prefix} {index + 1}".strip())
    else:
        shown = joiner.join(map(str, value)) if isinstance(value, list) else str(value)
        yield f"{prefix} {shown}".strip()


def _dotted(path: Path) -> str:
    return "$" + "".join(p if p.startswith("[") else f".{p}" for p in path)


def chunk_tree(doc: TreeDocument, max_chars: int) -> list[Draft]:
    """One chunk per item of every root document."""
    _, item_word, sep, joiner = _labels(
        json.dumps(doc.roots[:1], ensure_ascii=False, default=str)[:4000]
    )
    drafts = []
    for root_index, root in enumerate(doc.roots):
        base: Path = (f"[{root_index}]",) if len(doc.roots) > 1 else ()
        for path, value in items(root, base, max_chars):
            where = " > ".join(p for p in path if not p.startswith("[")) or doc.name
            semantic = f"[{doc.label}: {doc.name}] {item_word} {where}: " + sep.join(
                _flatten(value, joiner)
            )
            raw = f"{_dotted(path)}\n" + json.dumps(
                value, ensure_ascii=False, indent=2, default=str
            )
            drafts.append(Draft(semantic, raw, kind="item", section=path, locator=_dotted(path)))
    return drafts
