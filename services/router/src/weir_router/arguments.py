"""Filling a tool's JSON-schema arguments from the request, offline, without guessing.

Each property of the tool's input schema is filled from what the message says, by kind:
numbers; enum values the message names; dates ("2026-12-04", "today", "昨天"); time zones
and the other parameter helpers of seed 002 (by property name); file and directory paths,
resolved against what the server has shown in this run (`KnownPaths`); quoted strings; the
whole message for free-text properties. A required property nothing fills is reported as
missing: the planner says which, instead of calling the tool with a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from weir_router.known_paths import KnownPaths
from weir_router.params import (
    find_cache_key,
    find_service_hint,
    find_trace_id,
    find_user_id,
    infer_city,
    infer_metric_name,
    infer_query_window,
    infer_timezone,
)

_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'|“([^”]+)”|‘([^’]+)’|「([^」]+)」|`([^`]+)`")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])(/[\w.@+-]+(?:/[\w.@+-]+)*/?)")
_FILE_NAME = re.compile(r"(?<![\w/.-])([\w.-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,8})(?![\w.])")
_RELATIVE_DAYS = (
    (re.compile(r"\bday before yesterday\b|前天", re.I), -2),
    (re.compile(r"\byesterday\b|昨天", re.I), -1),
    (re.compile(r"\btoday\b|今天", re.I), 0),
    (re.compile(r"\btomorrow\b|明天", re.I), 1),
)
_DIRECTORY_WORDS = re.compile(r"director|folder|目录|文件夹|\bfiles\b|文件列表", re.I)

Helper = Callable[[str], str | None]

_BY_NAME: dict[str, Helper] = {
    "timezone": infer_timezone, "tz": infer_timezone, "timezone_name": infer_timezone,
    "source_timezone": infer_timezone,
    "service": find_service_hint, "service_name": find_service_hint, "app": find_service_hint,
    "trace_id": find_trace_id, "traceid": find_trace_id,
    "user_id": find_user_id, "uid": find_user_id, "userid": find_user_id,
    "key": find_cache_key, "cache_key": find_cache_key,
    "window": infer_query_window, "time_window": infer_query_window, "since": infer_query_window,
    "metric": infer_metric_name, "metric_name": infer_metric_name,
    "city": lambda t: (c.title() if (c := infer_city(t)) else None),
    "location": lambda t: (c.title() if (c := infer_city(t)) else None),
}  # fmt: skip
_FREE_TEXT = {"query", "q", "text", "message", "input", "prompt", "search", "keywords", "question"}
_DEFAULTS: dict[str, str] = {"timezone": "UTC", "window": "15m", "time_window": "15m"}
_PATHS = {"path", "file", "filename", "file_name", "filepath", "file_path", "source"}
_DIRECTORIES = {"directory", "dir", "folder", "root", "directory_path", "dir_path"}


@dataclass
class Filled:
    """The arguments found, and the required ones nothing in the message could fill."""

    arguments: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every required argument has a value."""
        return not self.missing


@dataclass
class _Message:
    """The request, with the pieces each property may take (each used once)."""

    text: str
    known: KnownPaths
    today: date
    numbers: list[float] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, text: str, known: KnownPaths, today: date) -> _Message:
        quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
        unquoted = _QUOTED.sub(" ", text)
        without_dates = _ISO_DATE.sub(" ", unquoted)
        numbers = [float(n) for n in _NUMBER.findall(_FILE_NAME.sub(" ", without_dates))]
        return cls(text, known, today, numbers, quoted)


def fill(
    schema: dict[str, Any],
    query: str,
    known: KnownPaths | None = None,
    today: date | None = None,
) -> Filled:
    """Arguments for a tool whose input schema is `schema`, from `query` and what is known."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = list(schema.get("required") or [])
    message = _Message.of(query, known or KnownPaths(), today or date.today())
    filled = Filled()
    for name, spec in properties.items():
        value = _value_for(name, spec if isinstance(spec, dict) else {}, message)
        if value is not None:
            filled.arguments[name] = value
        elif name in required:
            filled.missing.append(name)
    filled.missing += [n for n in required if n not in properties and n not in filled.missing]
    return filled


def fill_arguments(schema: dict[str, Any], query: str) -> dict[str, Any] | None:
    """Arguments for `schema` from `query` alone; None if a required one is unknown."""
    filled = fill(schema, query)
    return filled.arguments if filled.complete else None


def _value_for(name: str, spec: dict[str, Any], message: _Message) -> Any:
    key = name.lower()
    kind = spec.get("type")
    if spec.get("enum"):
        return _enum_value(spec["enum"], message.text)
    if kind in ("number", "integer"):
        return _number_value(kind, message)
    if kind == "array":
        return _array_value(key, spec, message)
    if kind not in (None, "string"):
        return None
    return _string_value(key, spec, message)


def _number_value(kind: str, message: _Message) -> float | int | None:
    if not message.numbers:
        return None
    number = message.numbers.pop(0)
    return int(number) if kind == "integer" else number


def _array_value(key: str, spec: dict[str, Any], message: _Message) -> list[str] | None:
    items = spec.get("items")
    strings = isinstance(items, dict) and items.get("type") == "string"
    if key in ("paths", "files", "file_paths") and strings:
        return _file_paths(message) or None
    return None


def _string_value(key: str, spec: dict[str, Any], message: _Message) -> str | None:
    if key in _PATHS or key in _DIRECTORIES:
        return _path_value(key, message)
    if spec.get("format") in ("date", "date-time") or key in ("date", "day", "on"):
        return _date_value(message)
    helper = _BY_NAME.get(key)
    found = helper(message.text) if helper else None
    if found is None and key in _FREE_TEXT:
        found = message.quoted.pop(0) if message.quoted else message.text
    if found is None and message.quoted and key not in _DEFAULTS:
        found = message.quoted.pop(0)
    return found if found is not None else _DEFAULTS.get(key)


def _enum_value(enum: list[Any], text: str) -> Any:
    lowered = text.lower()
    for value in enum:
        word = str(value).lower()
        if re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", lowered) or (
            not word.isascii() and word in lowered
        ):
            return value
    return None


def _path_value(key: str, message: _Message) -> str | None:
    absolute = _ABSOLUTE_PATH.search(_QUOTED.sub(" ", message.text))
    if absolute:
        return absolute.group(1)
    names = _file_names(message)
    if names and key not in _DIRECTORIES:
        return message.known.resolve_file(names[0])
    if key in _DIRECTORIES or _DIRECTORY_WORDS.search(message.text):
        return message.known.only_root()
    return None


def _file_paths(message: _Message) -> list[str]:
    resolved = [message.known.resolve_file(name) for name in _file_names(message)]
    return [path for path in resolved if path is not None]


def _file_names(message: _Message) -> list[str]:
    quoted = [q for q in message.quoted if "." in q or "/" in q]
    return quoted + [n for n in _FILE_NAME.findall(message.text) if n not in quoted]


def _date_value(message: _Message) -> str | None:
    explicit = _ISO_DATE.search(message.text)
    if explicit:
        return explicit.group(1)
    for pattern, days in _RELATIVE_DAYS:
        if pattern.search(message.text):
            return (message.today + timedelta(days=days)).isoformat()
    return None
