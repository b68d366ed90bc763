"""Coalescing a token stream into a handful of deltas (by size or by time)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

Emit = Callable[[int, str], Awaitable[None]]


class Coalescer:
    """Buffers text; emits `(seq, text)` once `max_chars` piled up or `max_delay_s` passed."""

    def __init__(self, emit: Emit, max_chars: int, max_delay_s: float) -> None:
        self._emit, self._max_chars, self._max_delay = emit, max_chars, max_delay_s
        self._buffer: list[str] = []
        self._size = 0
        self._seq = 0
        self._since = time.monotonic()
        self.text_parts: list[str] = []

    async def add(self, text: str) -> None:
        """Add a piece of text; flushes when the buffer is big or old enough."""
        if not text:
            return
        if not self._buffer:
            self._since = time.monotonic()
        self._buffer.append(text)
        self._size += len(text)
        self.text_parts.append(text)
        # the first piece goes out at once: time to first token is what a person notices
        first = self._seq == 0
        if (
            first
            or self._size >= self._max_chars
            or time.monotonic() - self._since >= self._max_delay
        ):
            await self.flush()

    async def flush(self) -> None:
        """Emit whatever is buffered."""
        if not self._buffer:
            return
        text, self._buffer, self._size = "".join(self._buffer), [], 0
        await self._emit(self._seq, text)
        self._seq += 1

    @property
    def text(self) -> str:
        """Everything added so far."""
        return "".join(self.text_parts)

    @property
    def deltas(self) -> int:
        """How many deltas were emitted."""
        return self._seq
