"""Loaders and structured chunkers: generated DOCX/PPTX/HTML, text formats, CSV/JSON/YAML."""

from __future__ import annotations

import io
import json
from typing import Any

import docx
import pptx
import pytest
from pptx.util import Inches

from weir_rag.ingest import (
    IngestError,
    IngestLimits,
    IngestSwitches,
    ProseDocument,
    chunk_document,
    parse_bytes,
)
from weir_rag.ingest.model import Draft

pytestmark = pytest.mark.unit


async def _drafts(data: bytes, source: str, **switches: bool) -> list[Draft]:
    flags = IngestSwitches(**switches)
    _, doc = await parse_bytes(data, source, None, flags, IngestLimits())
    return await chunk_document(doc, flags, IngestLimits())


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Runbook", level=1)
    document.add_heading("Restart the cache", level=2)
    document.add_paragraph("Drain the node, then restart redis-server and watch the hit rate.")
    table = document.add_table(rows=2, cols=2)
    for cell, text in zip(table._cells, ["host", "port", "cache-1", "6379"], strict=True):
        cell.text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


async def test_docx_paragraphs_headings_and_tables() -> None:
    _, doc = await parse_bytes(_docx(), "runbook.docx", None, IngestSwitches(), IngestLimits())
    assert isinstance(doc, ProseDocument)
    kinds = [(b.kind, b.level, b.text) for b in doc.blocks]
    assert kinds[:2] == [("heading", 1, "Runbook"), ("heading", 2, "Restart the cache")]
    assert ("table", 0, "| host | port |\n| --- | --- |\n| cache-1 | 6379 |") in kinds
    drafts = await _drafts(_docx(), "runbook.docx")
    assert drafts[0].locator == "Runbook"  # the heading-only H1 section merged with its child


def _pptx() -> bytes:
    deck = pptx.Presentation()
    for title, body in [
        ("Quarterly review", "Revenue grew 12 percent in the third quarter."),
        ("Next steps", "Hire two engineers for the platform team by March."),
    ]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    extra = deck.slides.add_slide(deck.slide_layouts[5])
    extra.shapes.title.text = "Budget"
    box = extra.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = "Cloud spend stays under 40k per month after the migration."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


async def test_pptx_slides_with_slide_locators() -> None:
    drafts = await _drafts(_pptx(), "review.pptx")
    by_locator = {d.locator: d.raw_content for d in drafts}
    assert "Revenue grew 12 percent" in by_locator["slide 1"]
    assert "# Next steps" in by_locator["slide 2"]
    assert "Cloud spend stays under 40k" in by_locator["slide 3"]


async def test_html_drops_script_style_and_navigation() -> None:
    html = b"""<html><head><title>Ops</title><style>p{color:red}</style></head><body>
    <nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav><script>var secret = 1;</script>
    <h1>Deploying</h1><p>Build the image, <b>push</b> it, then roll the deployment out.</p>
    <ul><li>Check the health endpoint</li><li>Watch the error rate</li></ul>
    <pre>kubectl rollout status deploy/web</pre><!-- a comment -->
    <table><tr><th>env</th><th>replicas</th></tr><tr><td>prod</td><td>6</td></tr></table>
    </body></html>"""
    _, doc = await parse_bytes(html, "ops.html", None, IngestSwitches(), IngestLimits())
    assert isinstance(doc, ProseDocument)
    text = "\n".join(b.text for b in doc.blocks)
    assert "secret" not in text
    assert "color" not in text
    assert "Home" not in text
    assert "comment" not in text
    assert "Build the image, push it, then roll the deployment out." in text
    assert "- Check the health endpoint" in text
    assert "```\nkubectl rollout status deploy/web\n```" in text
    assert "| prod | 6 |" in text
    assert doc.title == "Ops"


async def test_markdown_rst_and_plain_text() -> None:
    rst = (
        b"Guide\n=====\n\nIntro text that explains the guide in one sentence.\n\n"
        b"Setup\n-----\n\nInstall the package with pip and run the migrations.\n"
    )
    drafts = await _drafts(rst, "guide.rst")
    assert [d.locator for d in drafts] == ["Guide"]  # the short intro merged with "Setup"
    assert "## Setup" in drafts[0].raw_content
    plain = b"# not a heading\n\nSecond paragraph of a plain text file with enough words."
    _, doc = await parse_bytes(plain, "notes.txt", None, IngestSwitches(), IngestLimits())
    assert isinstance(doc, ProseDocument)
    assert [b.kind for b in doc.blocks] == ["text", "text"]


async def test_csv_rows_with_dual_storage() -> None:
    data = (
        "实例类型,CPU核数,内存,IP\nm6i.2xlarge,8,32GB,192.168.1.10\nc6i.large,2,4GB,192.168.1.11\n"
    )
    drafts = await _drafts(data.encode(), "servers.csv")
    assert len(drafts) == 2
    first = drafts[0]
    assert first.kind == "row"
    assert first.locator == "row 2"
    assert (
        first.semantic_text
        == "[表格: servers] 实例类型 m6i.2xlarge，CPU核数 8，内存 32GB，IP 192.168.1.10"
    )
    assert first.raw_content == (
        "| 实例类型 | CPU核数 | 内存 | IP |\n| --- | --- | --- | --- |\n"
        "| m6i.2xlarge | 8 | 32GB | 192.168.1.10 |"
    )


async def test_json_items_with_dual_storage() -> None:
    api: dict[str, Any] = {
        "info": {"title": "Users API", "version": "1.0"},
        "paths": {
            "/users": {"get": {"summary": "List users", "parameters": ["page", "limit"]}},
            "/users/{id}": {"delete": {"summary": "Delete a user", "responses": {"204": "gone"}}},
        },
    }
    drafts = await _drafts(json.dumps(api).encode(), "users.json")
    by_locator = {d.locator: d for d in drafts}
    assert set(by_locator) == {"$.info", "$.paths./users.get", "$.paths./users/{id}.delete"}
    item = by_locator["$.paths./users.get"]
    assert item.kind == "item"
    assert item.semantic_text == (
        "[JSON: users] Item paths > /users > get: summary List users, parameters page / limit"
    )
    assert json.loads(item.raw_content.split("\n", 1)[1]) == api["paths"]["/users"]["get"]


async def test_yaml_list_items_and_format_aware_switch() -> None:
    data = b"servers:\n  - name: web\n    cpu: 8\n  - name: db\n    cpu: 16\n"
    drafts = await _drafts(data, "fleet.yaml")
    assert [d.locator for d in drafts] == ["$.servers[0]", "$.servers[1]"]
    assert drafts[1].semantic_text == "[YAML: fleet] Item servers: name db, cpu 16"
    as_prose = await _drafts(data, "fleet.yaml", format_aware=False)
    assert [d.kind for d in as_prose] == ["prose"]


def _yaml_bomb() -> bytes:
    """ "Billion laughs": nine levels of nine aliases each."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines).encode()


@pytest.mark.parametrize(
    ("data", "source", "reason"),
    [
        (b"", "a.md", "the file is empty"),
        (b"  \n ", "a.csv", "the file is empty"),
        (b"{broken", "a.json", "the JSON is invalid"),
        (b"a: [1, 2\n", "a.yaml", "the YAML is invalid"),
        (_yaml_bomb(), "bomb.yaml", "the YAML expands to too much data"),
        (b"PK\x03\x04 not really a zip", "a.docx", "the DOCX file is damaged"),
        (b"\x00\x01binary", "a.txt", "the file is not text"),
        (b"hello", "a.exe", "unsupported file type: .exe"),
    ],
)
async def test_bad_files_raise_ingest_error(data: bytes, source: str, reason: str) -> None:
    with pytest.raises(IngestError) as caught:
        await _drafts(data, source)
    assert caught.value.reason.startswith(reason)


async def test_a_document_past_the_chunk_or_text_caps_is_refused() -> None:
    text = "\n\n".join(
        f"Paragraph {i} says something of its own, at some length." for i in range(60)
    )
    doc = (await parse_bytes(text.encode(), "many.txt", None, IngestSwitches(), IngestLimits()))[1]
    with pytest.raises(IngestError) as chunks:
        await chunk_document(doc, IngestSwitches(), IngestLimits(max_chunks=2))
    assert chunks.value.reason.startswith("the document makes")
    with pytest.raises(IngestError) as chars:
        await chunk_document(doc, IngestSwitches(), IngestLimits(max_text_chars=100))
    assert chars.value.reason.startswith("the document holds")
    assert await chunk_document(doc, IngestSwitches(), IngestLimits())
