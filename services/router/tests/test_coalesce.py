"""Token streams become a handful of deltas."""

from __future__ import annotations

import pytest

from weir_router.coalesce import Coalescer

pytestmark = pytest.mark.unit


async def test_small_tokens_are_coalesced_by_size_after_the_first() -> None:
    sent: list[tuple[int, str]] = []

    async def emit(seq: int, text: str) -> None:
        sent.append((seq, text))

    out = Coalescer(emit, max_chars=10, max_delay_s=60)
    for token in ["Hel", "lo", " wor", "ld,", " how", " are", " you", "?"]:
        await out.add(token)
    await out.flush()
    assert sent[0] == (0, "Hel")
    assert [s for s, _ in sent] == list(range(len(sent)))
    assert "".join(t for _, t in sent) == "Hello world, how are you?"
    assert len(sent) < 8
    assert out.text == "Hello world, how are you?"


async def test_flush_with_nothing_buffered_sends_nothing() -> None:
    sent: list[tuple[int, str]] = []

    async def emit(seq: int, text: str) -> None:
        sent.append((seq, text))

    out = Coalescer(emit, max_chars=10, max_delay_s=60)
    await out.flush()
    await out.add("")
    assert sent == []
