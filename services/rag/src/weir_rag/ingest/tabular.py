"""Structured files: CSV/TSV as header + rows, JSON and YAML as trees (safe loading only)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import PurePosixPath
from typing import Any

import yaml

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.model import TableDocument, TreeDocument
from weir_rag.ingest.text import decode_text

MAX_YAML_NODES = 1_000_000


def _name(source: str) -> str:
    return PurePosixPath(source.replace("\\", "/")).stem or source


def load_csv(data: bytes, source: str) -> TableDocument:
    """The first row is the header; the delimiter is sniffed (comma, tab, semicolon, pipe)."""
    text = decode_text(data)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(
            text[:8192], delimiters=",\t;|"
        )
    except csv.Error:
        dialect = csv.excel_tab if source.lower().endswith(".tsv") else csv.excel
    rows = [tuple(c.strip() for c in row) for row in csv.reader(io.StringIO(text), dialect)]
    rows = [r for r in rows if any(r)]
    if not rows:
        raise IngestError("the CSV file has no rows")
    header = tuple(h or f"column {i + 1}" for i, h in enumerate(rows[0]))
    return TableDocument(name=_name(source), header=header, rows=tuple(rows[1:]))


def load_json(data: bytes, source: str) -> TreeDocument:
    """One JSON document (JSON Lines: one per line)."""
    text = decode_text(data)
    try:
        roots: tuple[object, ...] = (json.loads(text),)
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            roots = tuple(json.loads(ln) for ln in lines)
        except json.JSONDecodeError:
            raise IngestError(f"the JSON is invalid: {exc}") from exc
    return TreeDocument(name=_name(source), label="JSON", roots=roots)


def load_yaml(data: bytes, source: str) -> TreeDocument:
    """Every document of a YAML stream; only plain data types are constructed."""
    try:
        roots = tuple(d for d in yaml.safe_load_all(decode_text(data)) if d is not None)
    except yaml.YAMLError as exc:
        raise IngestError(f"the YAML is invalid: {' '.join(str(exc).split())}") from exc
    _check_expansion(roots)
    return TreeDocument(name=_name(source), label="YAML", roots=roots)


def _check_expansion(roots: tuple[Any, ...]) -> None:
    """YAML aliases share nodes; expanded, a few lines can mean billions ("billion laughs")."""
    stack: list[Any] = list(roots)
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_YAML_NODES:
            raise IngestError("the YAML expands to too much data (nested aliases)")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
