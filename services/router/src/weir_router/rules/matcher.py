"""Compiled term matchers of the rule-based intent classifier (F02, seed 002).

Every matcher is compiled once, when its table is loaded; classification only runs precompiled
patterns. The classifier NFKC-normalizes and lower-cases the text once, so matching is
case-insensitive; write English terms and regexes in lower case.

Term conventions of :func:`build_matcher`:

* ``zh`` terms are literal strings matched anywhere (Chinese has no word boundaries);
* ``en`` terms are (lower-case) regex fragments matched on ASCII word boundaries, so ``hi``
  never matches inside ``this``; a space in a term matches any run of whitespace, ``" ?"``
  optional whitespace;
* ``regex`` terms are raw regex fragments, used as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from weir_common.search.text import CJK

__all__ = ["Matcher", "build_matcher", "compile_terms", "content_length"]

_EN_LEFT = r"(?<![a-z0-9_])"
_EN_RIGHT = r"(?![a-z0-9_])"
_CONTENT_CHARS = re.compile(f"[a-zA-Z0-9{CJK}]")


@dataclass(frozen=True, slots=True)
class Matcher:
    """One named group of terms, compiled into at most two precompiled patterns.

    Chinese literals get a pattern of their own: an alternation of plain literals lets the
    regex engine skip ahead on the first character, which keeps long texts cheap.
    """

    name: str
    patterns: tuple[re.Pattern[str], ...]

    def find(self, text: str) -> str | None:
        """Return the first matched text in lower-cased ``text``, or ``None``."""
        for pattern in self.patterns:
            found = pattern.search(text)
            if found is not None:
                return found.group(0)
        return None

    def remove(self, text: str) -> str:
        """Replace every match in lower-cased ``text`` with a space."""
        for pattern in self.patterns:
            text = pattern.sub(" ", text)
        return text


def _en_fragment(term: str) -> str:
    """Turn an English fragment into regex: a space matches whitespace, ``" ?"`` optional."""
    return term.replace(" ?", "\0").replace(" ", r"\s+").replace("\0", r"\s*")


def compile_terms(
    zh: Iterable[str] = (), en: Iterable[str] = (), regex: Iterable[str] = ()
) -> tuple[re.Pattern[str], ...]:
    """Compile Chinese literals, then bounded English fragments and raw regexes together."""
    if any(isinstance(terms, str) for terms in (zh, en, regex)):
        raise TypeError("terms must be an iterable of strings, not a single string")
    patterns: list[re.Pattern[str]] = []
    literals = sorted({term.lower() for term in zh}, key=lambda term: (-len(term), term))
    if literals:
        patterns.append(re.compile("|".join(re.escape(term) for term in literals)))
    words = [_en_fragment(term) for term in en]
    parts = [_EN_LEFT + "(?:" + "|".join(words) + ")" + _EN_RIGHT] if words else []
    parts += list(regex)
    if parts:
        patterns.append(re.compile("|".join(parts)))
    return tuple(patterns)


def build_matcher(
    name: str, zh: Iterable[str] = (), en: Iterable[str] = (), regex: Iterable[str] = ()
) -> Matcher:
    """Build a named :class:`Matcher` from the three kinds of terms."""
    return Matcher(name=name, patterns=compile_terms(zh, en, regex))


def content_length(text: str) -> int:
    """Count letters, digits and CJK characters: what is left that carries meaning."""
    return len(_CONTENT_CHARS.findall(text))
