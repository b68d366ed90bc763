"""weir_deploy: start the local engines (Kafka, PostgreSQL, Redis, Milvus) and services.

The names below are imported on first use, so `weir chat` and `weir --help` start quickly.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Engine, EngineStartError, default_data_dir
    from .services import Services
    from .stack import ALL_ENGINES, Stack

__all__ = ["ALL_ENGINES", "Engine", "EngineStartError", "Services", "Stack", "default_data_dir"]
_HOMES = {"Engine": "base", "EngineStartError": "base", "default_data_dir": "base",
          "Services": "services", "ALL_ENGINES": "stack", "Stack": "stack"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
