"""Text analysis shared by every engine: the one CJK character class, and BM25 terms.

Chinese has no spaces, so runs of CJK characters are segmented with jieba (search mode:
words plus their shorter parts, so "数据库连接池" also matches "数据库"). English words are
lower-cased and reduced with the Snowball English (Porter2) stemmer, the same algorithm as
tantivy's ``en_stem`` — the embedded index and Elasticsearch see the same terms.

The character classes are strings for use inside ``[...]``: a module that needs a wider
class on purpose (kana, hangul, fullwidth forms) composes it from these constants.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from typing import Any

import snowballstemmer

#: CJK unified ideographs: extension A, the basic block, compatibility ideographs.
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: Japanese hiragana and katakana.
KANA = "\u3040-\u30ff"
#: Hangul syllables.
HANGUL = "\uac00-\ud7af"
#: CJK symbols and punctuation (ideographic space, 。、「」...).
CJK_PUNCTUATION = "\u3000-\u303f"
#: Halfwidth and fullwidth forms (，：！ and fullwidth letters).
FULLWIDTH = "\uff00-\uffef"

CJK_CHAR = re.compile(f"[{CJK}]")
CJK_RUN = re.compile(f"[{CJK}]+")
_TOKEN = re.compile(f"[{CJK}]+|[^\\W_]+")
#: tantivy's default `remove_long` limit: longer tokens are dropped (hashes, base64 blobs).
MAX_TOKEN_CHARS = 40

_jieba_lock = threading.Lock()
_jieba: Any = None
_stemmer = snowballstemmer.stemmer("english")


def has_cjk(text: str) -> bool:
    """True when the text contains a CJK ideograph."""
    return CJK_RUN.search(text) is not None


def cjk_count(text: str) -> int:
    """How many CJK ideographs the text has."""
    return len(CJK_CHAR.findall(text))


def _segmenter() -> Any:
    """jieba, initialised once (loads its dictionary: ~1 s, so do it off the event loop)."""
    global _jieba  # noqa: PLW0603 - one process-wide dictionary
    with _jieba_lock:
        if _jieba is None:
            import jieba  # noqa: PLC0415 - slow import, only when Chinese is analysed

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def warm_up() -> None:
    """Load the Chinese dictionary now (call from a thread at start-up)."""
    _segmenter()


def _cut(run: str) -> str:
    words = _segmenter().cut_for_search(run)
    return " ".join(w for w in words if w.strip())


def segment(text: str) -> str:
    """The text with every CJK run split into space-separated jieba words."""
    if not CJK_RUN.search(text):
        return text
    return CJK_RUN.sub(lambda m: f" {_cut(m.group(0))} ", text)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one lower-case word ("moved", "moves" → "move")."""
    return str(_stemmer.stemWord(word))


def terms(text: str) -> list[str]:
    """Index/query terms: segmented, lower-cased, stemmed; long tokens dropped."""
    out: list[str] = []
    for token in _TOKEN.findall(segment(text).lower()):
        if len(token) > MAX_TOKEN_CHARS:
            continue
        out.append(token if CJK_RUN.fullmatch(token) else stem(token))
    return out
