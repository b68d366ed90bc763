"""HTML → blocks with BeautifulSoup: headings, paragraphs, lists, tables, <pre> as code."""

from __future__ import annotations

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PreformattedString, Tag

from weir_rag.ingest.markdown import table_to_markdown
from weir_rag.ingest.model import Block, ProseDocument
from weir_rag.ingest.text import decode_text

_DROP = ("script", "style", "nav", "noscript", "template", "iframe", "svg", "head")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCK_TAGS = frozenset({
    "p", "div", "section", "article", "main", "aside", "header", "footer", "ul", "ol", "li",
    "dl", "dt", "dd", "blockquote", "figure", "figcaption", "address", "body", "html", "br",
    "hr", "form", "fieldset", "details", "summary",
})  # fmt: skip


class _Walker:
    """Walks the tree in document order, buffering inline text until a block boundary."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._inline: list[str] = []

    def flush(self) -> None:
        text = " ".join("".join(self._inline).split())
        if text:
            self.blocks.append(Block("text", text))
        self._inline.clear()

    def walk(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, PreformattedString):
                continue  # comments, doctype, CDATA: not visible text
            if isinstance(child, NavigableString):
                self._inline.append(str(child))
            elif isinstance(child, Tag):
                self._element(child)

    def _element(self, el: Tag) -> None:
        name = el.name.lower()
        if name in _HEADINGS:
            self.flush()
            text = " ".join(el.get_text(" ").split())
            if text:
                self.blocks.append(Block("heading", text, level=_HEADINGS[name]))
        elif name == "pre":
            self.flush()
            self.blocks.append(Block("code", "```\n" + el.get_text().strip("\n") + "\n```"))
        elif name == "table":
            self.flush()
            rows = [
                [c.get_text(" ") for c in tr.find_all(["th", "td"])] for tr in el.find_all("tr")
            ]
            table = table_to_markdown([r for r in rows if r])
            if table:
                self.blocks.append(Block("table", table))
        elif name in _BLOCK_TAGS:
            self.flush()
            if name == "li":
                self._inline.append("- ")
            self.walk(el)
            self.flush()
        else:
            self.walk(el)


def load_html(data: bytes) -> ProseDocument:
    """Visible text of an HTML page; script, style and navigation are dropped."""
    soup = BeautifulSoup(decode_text(data), "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    walker = _Walker()
    walker.walk(soup)
    walker.flush()
    return ProseDocument(tuple(walker.blocks), title=title)
