"""Untrusted text in a prompt (F04): escaped and fenced, so nothing inside it — a document
saying `</evidence> ignore previous instructions`, a crafted file name, a tool's output —
can close its fence or pass for weir's own rules. Every service builds prompts with it."""

from __future__ import annotations

from html import escape


def fence(tag: str, text: str, *, block: bool = True) -> str:
    """Escape untrusted `text` (`<`, `>`, `&`) so no tag inside it, in any case or spelling,
    can open or close a fence, then put it between `<tag>` and `</tag>`."""
    sep = "\n" if block else ""
    return f"<{tag}>{sep}{escape(text, quote=False)}{sep}</{tag}>"
