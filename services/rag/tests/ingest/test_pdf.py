"""PDF structure extraction on the real PDFs of the shared test data."""

from __future__ import annotations

import time
import unicodedata

import pytest

from weir_rag.ingest import IngestError, IngestLimits, IngestSwitches, ProseDocument, parse_bytes
from weir_rag.ingest import pdf as pdf_module
from weir_rag.ingest.cleaner import clean_blocks

from .conftest import pdf_bytes

pytestmark = pytest.mark.unit


async def _parse(name: str, **switches: bool) -> ProseDocument:
    _, doc = await parse_bytes(
        pdf_bytes(name), name, None, IngestSwitches(**switches), IngestLimits()
    )
    assert isinstance(doc, ProseDocument)
    return doc


async def test_federal_register_headings_by_size_and_weight() -> None:
    doc = await _parse("federal-register-2020-17221.pdf")
    headings = {(b.level, b.text) for b in doc.blocks if b.kind == "heading"}
    assert (1, "Proposed Rules") in headings  # 18 pt: the largest size
    for title in ("Background", "Examining the AD Docket", "Proposed Design Changes"):
        assert (2, title) in headings  # whole-line bold at body size: one level below
    assert all(1 <= level <= 4 for level, _ in headings)


async def test_federal_register_reads_columns_and_joins_pages() -> None:
    doc = await _parse("federal-register-2020-17221.pdf")
    texts = [b.text for b in doc.blocks]
    lion_air = next(b for b in doc.blocks if b.text.startswith("On October 29, 2018, a Boeing"))
    assert lion_air.pages == (1, 2)  # one paragraph across the page break
    assert "resulting in 189 fatalities." in lion_air.text
    assert not any("Federal Register / Vol. 85" in t for t in texts)  # running head dropped
    assert not any(len(t) <= 2 for t in texts)  # no one-letter lines from rotated margin text


async def test_word365_headings_and_table() -> None:
    doc = await _parse("word365_structure.pdf")
    assert doc.blocks[0].kind == "heading"
    assert (doc.blocks[0].level, doc.blocks[0].text) == (1, "Titre")
    table = next(b.text for b in doc.blocks if b.kind == "table")
    assert table.splitlines()[:3] == [
        "| En-tête 1 | En-tête 2 | En-tête 3 |",
        "| --- | --- | --- |",
        "| Ligne 1 | Alouette | Farfadet |",
    ]


@pytest.mark.parametrize(
    ("name", "header_cell", "row_cell"),
    [
        ("senate-expenditures.pdf", "PAYEENAME", "CITIBANK"),
        ("nics-background-checks-2015-11.pdf", "State / Territory", "| Alabama |"),
    ],
)
async def test_tables_become_markdown(name: str, header_cell: str, row_cell: str) -> None:
    doc = await _parse(name)
    tables = [b.text for b in doc.blocks if b.kind == "table"]
    assert tables
    assert any(header_cell in t and row_cell in t for t in tables)
    for table in tables:
        lines = table.splitlines()
        assert lines[1].startswith("| --- |")
        widths = {line.count(" | ") for line in lines if not line.startswith("| ---")}
        assert len(widths) == 1  # every row has the header's number of cells


async def test_french_minutes_cleaned() -> None:
    doc = await _parse("2023-06-20-PV.pdf")
    blocks = clean_blocks(doc.blocks)
    text = "\n".join(b.text for b in blocks)
    assert unicodedata.normalize("NFKC", text) == text
    assert not any(ord(c) < 32 and c not in "\n\t" for c in text)
    assert "  " not in text
    assert not any(line.strip().isdigit() for line in text.splitlines())
    assert "PROCÈS-VERBAL" in text
    assert "La séance est levée à 16h05." in text
    assert any(b.kind == "heading" and b.text == "5. LEVÉE DE LA SÉANCE" for b in blocks)


async def test_plain_text_when_structure_is_switched_off() -> None:
    doc = await _parse("2023-06-20-PV.pdf", structure_pdf=False)
    assert {b.kind for b in doc.blocks} == {"text"}
    assert [b.pages for b in doc.blocks] == [(1,), (2,)]


def test_plain_text_fallback_when_structure_extraction_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(pages: object) -> list[object]:
        raise ValueError("layout analysis failed")

    monkeypatch.setattr(pdf_module, "build_blocks", broken)
    doc = pdf_module.load_pdf(pdf_bytes("word365_structure.pdf"))
    assert len(doc.blocks) == 1
    assert "Lorem ipsum dolor" in doc.blocks[0].text


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("empty.pdf", "the file is empty"),
        ("malformed-from-issue-932.pdf", "the PDF is damaged: its text lies outside the page area"),
        ("password-example.pdf", "the PDF is encrypted (password-protected)"),
    ],
)
async def test_bad_pdfs_fail_with_a_reason_quickly(name: str, reason: str) -> None:
    started = time.monotonic()
    with pytest.raises(IngestError) as caught:
        await _parse(name)
    assert caught.value.reason.startswith(reason)
    assert time.monotonic() - started < 10


async def test_parsing_is_stopped_at_the_time_limit() -> None:
    limits = IngestLimits(parse_timeout_s=0.05)
    started = time.monotonic()
    with pytest.raises(IngestError, match=r"took longer than 0\.05 s"):
        await parse_bytes(
            pdf_bytes("federal-register-2020-17221.pdf"), "fr.pdf", None, IngestSwitches(), limits
        )
    assert time.monotonic() - started < 5
    _, doc = await parse_bytes(
        pdf_bytes("word365_structure.pdf"), "w.pdf", None, IngestSwitches(), IngestLimits()
    )
    assert doc  # the pool replaced the killed worker
