"""After chunking: merge short prose chunks, drop fragments, add the H1 context prefix,
and set locators ("p. 3", "pp. 3–4", "slide 2", "Setup > Install").

Structured chunks (CSV rows, JSON items) are never merged or prefixed: their dual storage
is already self-contained.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from weir_rag.ingest.model import Draft

_MEANINGFUL = re.compile(r"[^\W_]")


def meaningful_chars(text: str) -> int:
    """Letters and digits (any script); markup, punctuation and spaces do not count."""
    return len(_MEANINGFUL.findall(text))


def _related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Same section, or one encloses the other (a heading alone before its first subsection)."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _join(a: Draft, b: Draft) -> Draft:
    text = a.raw_content + "\n\n" + b.raw_content
    pages = tuple(sorted(set(a.pages) | set(b.pages)))
    section = a.section if len(a.section) <= len(b.section) else b.section
    return replace(a, semantic_text=text, raw_content=text, pages=pages, section=section)


def _mergeable(a: Draft, b: Draft, below: int, max_chars: int) -> bool:
    fits = len(a.raw_content) + len(b.raw_content) <= max_chars + below
    return not (a.structured or b.structured) and _related(a.section, b.section) and fits


def merge_short(drafts: Sequence[Draft], below: int, max_chars: int) -> list[Draft]:
    """A prose chunk shorter than `below` joins its next (else previous) related neighbour."""
    out: list[Draft] = []
    carry: Draft | None = None
    for draft in drafts:
        current = draft
        if carry is not None:
            if _mergeable(carry, current, below, max_chars):
                current = _join(carry, current)
            else:
                out.append(carry)
            carry = None
        if not current.structured and len(current.raw_content) < below:
            carry = current
        else:
            out.append(current)
    if carry is not None:
        if out and _mergeable(out[-1], carry, below, max_chars):
            out[-1] = _join(out[-1], carry)
        else:
            out.append(carry)
    return out


def drop_fragments(drafts: Sequence[Draft], min_chars: int) -> list[Draft]:
    """Prose chunks with fewer than `min_chars` meaningful characters are noise (but a short
    document is still a document: if nothing would remain, everything stays)."""
    kept = [d for d in drafts if d.structured or meaningful_chars(d.raw_content) >= min_chars]
    return kept or list(drafts)


def add_context(drafts: Sequence[Draft], title: str) -> list[Draft]:
    """ "[H1 title] " before the searched text of prose chunks (the section's top heading, else
    the document title), unless the chunk already starts with it."""
    out = []
    for d in drafts:
        head = d.section[0] if d.section else title
        plain = d.semantic_text.lstrip("# ")
        if d.structured or not head or plain.startswith(head):
            out.append(d)
        else:
            out.append(replace(d, semantic_text=f"[{head}] {d.semantic_text}"))
    return out


def page_locator(pages: Sequence[int], label: str) -> str:
    """ "p. 3", "pp. 3–4" (first to last), or "slide 2", "slides 2–3"."""
    if not pages:
        return ""
    first, last = min(pages), max(pages)
    if label == "p.":
        return f"p. {first}" if first == last else f"pp. {first}–{last}"
    return f"{label} {first}" if first == last else f"{label}s {first}–{last}"


def locate(drafts: Sequence[Draft], paged: bool, label: str) -> list[Draft]:
    """Set the locator of prose chunks: pages for paged formats, else the heading path."""
    out = []
    for d in drafts:
        if d.structured:
            out.append(d)
            continue
        where = page_locator(d.pages, label) if paged else " > ".join(d.section)
        out.append(replace(d, locator=where))
    return out
