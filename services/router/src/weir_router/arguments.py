"""Filling a tool's JSON-schema arguments from the request, with the parameter helpers."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

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

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

Helper = Callable[[str], str | None]

_BY_NAME: dict[str, Helper] = {
    "timezone": infer_timezone, "tz": infer_timezone, "timezone_name": infer_timezone,
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


def fill_arguments(schema: dict[str, Any], query: str) -> dict[str, Any] | None:
    """Arguments for a tool whose input schema is `schema`; None if a required one is unknown."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    numbers = [float(n) for n in _NUMBER.findall(query)]
    arguments: dict[str, Any] = {}
    for name, spec in properties.items():
        value = _value_for(name, spec if isinstance(spec, dict) else {}, query, numbers)
        if value is not None:
            arguments[name] = value
        elif name in required:
            return None
    return arguments


def _value_for(name: str, spec: dict[str, Any], query: str, numbers: list[float]) -> Any:
    key = name.lower()
    kind = spec.get("type")
    if kind in ("number", "integer"):
        if not numbers:
            return None
        number = numbers.pop(0)
        return int(number) if kind == "integer" else number
    helper = _BY_NAME.get(key)
    found = helper(query) if helper else (query if key in _FREE_TEXT else None)
    value = found if found is not None else _DEFAULTS.get(key)
    enum = spec.get("enum")
    if enum and value not in enum:
        return None
    return value
