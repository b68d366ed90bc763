"""Sentences and questions: the one splitter and the one question detector of the service.

Chinese questions often carry no question mark ("我叫什么名字", "你还记得我喜欢什么吗"), so a
question is a sentence ending in one, holding a Chinese question word, or opening with an
English question word. Words that only look like questions are not: "我什么都吃" and
"我不怎么喜欢辣" are statements.
"""

from __future__ import annotations

import re

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
