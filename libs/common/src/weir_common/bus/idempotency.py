"""Dedupe by event id or idempotency key, so redelivered events do their work once."""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol


class Deduper(Protocol):
    """Remembers which keys were already handled."""

    async def seen(self, key: str) -> bool:
        """True when `key` was marked before."""
        ...

    async def mark(self, key: str) -> None:
        """Remember `key` (call after the work succeeded, so a crash means a retry)."""
        ...


class MemoryDeduper:
    """A bounded in-process deduper: enough for workers whose handlers are idempotent reads.

    Durable dedupe (the harness, short-term memory) lives in the owner's own store, in the
    same transaction as the work.
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._max = max_keys

    async def seen(self, key: str) -> bool:
        """True when `key` was marked and not yet evicted."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return True
        return False

    async def mark(self, key: str) -> None:
        """Remember `key`, evicting the oldest past the bound."""
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self._max:
            self._keys.popitem(last=False)
