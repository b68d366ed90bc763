"""Tier 3 of the Markdown chunker: pack units up to a size, with overlap; code is never cut."""

from __future__ import annotations

from collections.abc import Sequence

from weir_rag.ingest.units import Unit, hard_split, join_units


def _explode(units: Sequence[Unit], max_chars: int, overlap: int) -> list[Unit]:
    """Text units longer than the limit become windows; code and tables stay whole."""
    out: list[Unit] = []
    for u in units:
        if len(u.text) > max_chars and u.kind == "text":
            out.extend(
                Unit(p, "text", u.block, u.pages) for p in hard_split(u.text, max_chars, overlap)
            )
        else:
            out.append(u)
    return out


def _tail(units: Sequence[Unit], overlap: int) -> list[Unit]:
    """Trailing text sentences that fit in the overlap budget (whole sentences only)."""
    tail: list[Unit] = []
    size = 0
    for u in reversed(units):
        if u.kind != "text" or size + len(u.text) > overlap:
            break
        tail.insert(0, u)
        size += len(u.text) + 1
    return tail


def pack_fixed(units: Sequence[Unit], max_chars: int, overlap: int) -> list[list[Unit]]:
    """Greedy packing: a new group starts when the next unit would pass `max_chars`."""
    groups: list[list[Unit]] = []
    current: list[Unit] = []
    for unit in _explode(units, max_chars, overlap):
        if current and len(join_units([*current, unit])) > max_chars:
            groups.append(current)
            carried = _tail(current, overlap)
            fits = len(join_units([*carried, unit])) <= max_chars
            current = carried if fits and len(carried) < len(current) else []
        current.append(unit)
    if current:
        groups.append(current)
    return groups


def split_fixed(units: Sequence[Unit], max_chars: int, overlap: int) -> list[str]:
    """The packed groups as texts."""
    return [join_units(g) for g in pack_fixed(units, max_chars, overlap)]
