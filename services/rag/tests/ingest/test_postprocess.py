"""Post-processing: merging, fragment dropping, context prefix, locators, chunk ids."""

from __future__ import annotations

import hashlib

import pytest

from weir_rag.ingest.chunks import to_chunks
from weir_rag.ingest.model import Draft
from weir_rag.ingest.postprocess import (
    add_context,
    drop_fragments,
    locate,
    merge_short,
    page_locator,
)

pytestmark = pytest.mark.unit


def prose(text: str, *section: str, pages: tuple[int, ...] = ()) -> Draft:
    return Draft(text, text, section=section, pages=pages)


def test_short_chunks_merge_within_their_section() -> None:
    drafts = [
        prose("# A", "A"),
        prose("Body of A " * 20, "A"),
        prose("tiny", "B"),
        prose("x" * 200, "C"),
    ]
    merged = merge_short(drafts, below=150, max_chars=800)
    assert merged[0].raw_content.startswith("# A\n\nBody of A")
    assert [d.raw_content[:4] for d in merged] == ["# A\n", "tiny", "xxxx"]  # B stays alone


def test_heading_only_parent_merges_into_its_first_subsection() -> None:
    merged = merge_short(
        [prose("# Setup", "Setup"), prose("## Install\n\nRun it.", "Setup", "Install")], 150, 800
    )
    assert len(merged) == 1
    assert merged[0].section == ("Setup",)


def test_structured_chunks_are_never_merged_or_dropped() -> None:
    rows = [Draft("[Table: t] a 1", "| a |\n| --- |\n| 1 |", kind="row")] * 3
    assert merge_short(rows, 150, 800) == rows
    assert drop_fragments(rows, 30) == rows


def test_fragments_are_dropped_unless_nothing_would_remain() -> None:
    drafts = [prose("— 3 —"), prose("A sentence with more than thirty letters in it.")]
    assert [d.raw_content[:1] for d in drop_fragments(drafts, 30)] == ["A"]
    assert drop_fragments([prose("Short note.")], 30) == [prose("Short note.")]


def test_context_prefix_uses_the_h1() -> None:
    drafts = add_context(
        [prose("Body", "Guide", "Install"), prose("# Guide\n\nintro", "Guide"), prose("x")],
        "Doc title",
    )
    assert [d.semantic_text for d in drafts] == [
        "[Guide] Body",
        "# Guide\n\nintro",
        "[Doc title] x",
    ]
    assert drafts[0].raw_content == "Body"  # the model gets the text as written


def test_locators() -> None:
    assert page_locator([3], "p.") == "p. 3"
    assert page_locator([3, 4, 5], "p.") == "pp. 3–5"
    assert page_locator([2, 3], "slide") == "slides 2–3"
    paged = locate([prose("a", "H", pages=(1, 2))], paged=True, label="p.")
    assert paged[0].locator == "pp. 1–2"
    assert (
        locate([prose("a", "Setup", "Install")], paged=False, label="p.")[0].locator
        == "Setup > Install"
    )


def test_chunks_are_numbered_and_hashed() -> None:
    chunks = to_chunks(
        [prose("one", "S", pages=(1,)), prose("two", "S")],
        document_id="d1",
        source="a.pdf",
        collection="kb",
        owner="u1",
        fmt="pdf",
    )
    assert [(c.chunk_id, c.chunk_index) for c in chunks] == [("d1#0", 0), ("d1#1", 1)]
    assert chunks[0].metadata["content_hash"] == hashlib.sha256(b"one").hexdigest()
    assert chunks[0].metadata["pages"] == "1"
    assert "pages" not in chunks[1].metadata
    assert (chunks[0].owner, chunks[0].collection, chunks[0].source) == ("u1", "kb", "a.pdf")
