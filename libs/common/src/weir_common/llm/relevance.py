"""Tiny, deterministic lexical relevance for the offline responder (English + Chinese).

Latin text is split into lower-cased words (stop words dropped), each reduced to its Snowball
stem ("moved" and "move" meet);
runs of CJK characters become character bigrams, so Chinese needs no word segmenter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from weir_common.search.text import CJK_CHAR, CJK_RUN, stem

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；\n])\s*")

_EN_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "about",
        "from",
        "into",
        "over",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "it",
        "its",
        "they",
        "them",
        "their",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "not",
        "no",
        "yes",
        "so",
        "than",
        "then",
        "there",
        "here",
        "just",
        "also",
        "any",
        "some",
        "all",
        "please",
        "tell",
        "know",
        "say",
        "said",
        "give",
        "let",
        "s",
        "t",
    }
)
_ZH_STOP = frozenset(
    {
        "什么",
        "怎么",
        "如何",
        "是否",
        "是不",
        "不是",
        "我们",
        "你们",
        "他们",
        "可以",
        "一个",
        "这个",
        "那个",
        "一下",
        "请问",
        "告诉",
        "知道",
        "的是",
        "是什",
        "么是",
    }
)

_ZH_PARTICLES = frozenset("的了吗呢吧啊是")

Language = Literal["en", "zh"]


def cjk_count(text: str) -> int:
    """Number of CJK ideographs in ``text``."""
    return len(CJK_CHAR.findall(text))


def detect_language(text: str) -> Language:
    """ "zh" when CJK characters are at least as frequent as Latin words, else "en"."""
    cjk = cjk_count(text)
    latin_words = len(_WORD.findall(text.lower()))
    return "zh" if cjk > 0 and cjk >= latin_words else "en"


def terms(text: str) -> set[str]:
    """Distinct index terms: Latin words and CJK bigrams (single CJK chars stand alone)."""
    lowered = text.lower()
    out: set[str] = set()
    for word in _WORD.findall(CJK_RUN.sub(" ", lowered)):
        if word in _EN_STOP or len(word) < 2:
            continue
        out.add(stem(word))
    for run in CJK_RUN.findall(lowered):
        if len(run) == 1:
            out.add(run)
            continue
        bigrams = (run[i : i + 2] for i in range(len(run) - 1))
        out.update(b for b in bigrams if not _ZH_PARTICLES.intersection(b))
    return out - _ZH_STOP


def overlap(query_terms: set[str], text: str) -> int:
    """How many of ``query_terms`` occur in ``text``."""
    return len(query_terms & terms(text))


def rank(query: str, texts: Sequence[str], limit: int) -> list[int]:
    """Indices of the ``limit`` most relevant texts, best first (ties keep input order).

    A text is relevant when it shares at least one term with the query and at least half as
    many as the best text does, so weak matches only show when nothing stronger exists.
    """
    q = terms(query)
    if not q:
        return []
    scored = [(overlap(q, t), i) for i, t in enumerate(texts)]
    top = max((s for s, _ in scored), default=0)
    needed = max(1, (top + 1) // 2)
    kept = sorted(((s, i) for s, i in scored if s >= needed), key=lambda si: (-si[0], si[1]))
    return [i for _, i in kept[:limit]]


def best_excerpt(query: str, text: str, max_chars: int = 320) -> str:
    """The most relevant stretch of ``text`` (whole text when short enough)."""
    clean = " ".join(text.split())
    if len(clean) <= max_chars:
        return clean
    sentences = [s for s in _SENTENCE_END.split(clean) if s]
    q = terms(query)
    best = max(range(len(sentences)), key=lambda i: (overlap(q, sentences[i]), -i))
    excerpt = sentences[best]
    nxt = best + 1
    while nxt < len(sentences) and len(excerpt) + len(sentences[nxt]) + 1 <= max_chars:
        excerpt = f"{excerpt} {sentences[nxt]}"
        nxt += 1
    if len(excerpt) > max_chars:
        excerpt = excerpt[: max_chars - 1].rstrip() + "…"
    prefix = "…" if best > 0 else ""
    suffix = "…" if nxt < len(sentences) and not excerpt.endswith("…") else ""
    return f"{prefix}{excerpt}{suffix}"
