"""Sentences and questions (the one splitter and the one question detector of the service),
the language of a text and its terms.

Chinese questions often carry no question mark ("我叫什么名字", "你还记得我喜欢什么吗"), so a
question is a sentence ending in one, holding a Chinese question word, or opening with an
English question word. Words that only look like questions are not: "我什么都吃" and
"我不怎么喜欢辣" are statements.
"""

from __future__ import annotations

import re

from weir_common.search.text import CJK_RUN

# A "." inside a token ("3.5", "node.js") does not end a sentence; trailing marks ("？！")
# stay with the sentence they close.
_SENTENCE = re.compile(r"(?:[^。.!！?？;；\n]|\.(?=\S))+[。.!！?？;；\n]*")
_MARKS = "。.!！?？;；\n"
_QUESTION = re.compile(
    r"[?？]\s*$"
    r"|什么(?![都也])|吗(?!啡)|哪(?![里儿]?[都也])|谁(?![都也])|(?<!不)怎么|多少"
    r"|^\s*(?:what|which|who|whom|whose|how|why|when|where)\b"
    r"|^\s*(?:do|does|did|is|are|am|was|were|can|could|would|will|should|shall|have|has)"
    r"\b(?!')"
    r"|^\s*(?:tell me|remind me)\b|\b(?:whether|do I|did I)\b",
    re.I,
)


def sentences(text: str) -> list[str]:
    """The sentences (or clauses, split at ；/;) of `text`, each with its closing marks."""
    return [s for s in (m.strip() for m in _SENTENCE.findall(text)) if s.rstrip(_MARKS)]


def is_question(sentence: str) -> bool:
    """True when one sentence asks rather than tells (with or without a question mark)."""
    return bool(_QUESTION.search(sentence.strip()))


_LATIN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?", re.IGNORECASE)
_STOP_WORDS = (
    "a an the and or but of to in on at for with is am are was were be been i me my you "
    "your it its this that what which who do does did have has had so very just "
    "的 了 是 我 你 吗 呢"
)
_STOP = frozenset(_STOP_WORDS.split())


def is_chinese(text: str) -> bool:
    """True when the text is mostly Chinese (decides labels and separators)."""
    cjk = sum(len(m) for m in CJK_RUN.findall(text))
    latin = sum(len(m) for m in _LATIN.findall(text))
    return cjk > 0 and cjk * 2 >= latin


def terms(text: str) -> list[str]:
    """Words of Latin text (no stop words) and CJK characters plus their bigrams."""
    out = [w.lower() for w in _LATIN.findall(text) if w.lower() not in _STOP]
    for run in CJK_RUN.findall(text):
        chars = [c for c in run if c not in _STOP]
        out.extend(chars)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out
