"""The memory block a model reads (seeds 000 and 001), in the user's language:

【用户偏好】
姓名: 小明
=== 长期记忆 ===
- [偏好] 我喜欢打篮球 (2026-12-01)
=== 当前会话摘要 ===
…
=== 回忆结果 (RecallTopic) ===
…

When long-term memory was searched and nothing passed, its block says so (seed 003's
"记忆无命中"), so the model knows it was looked up rather than missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .sessions.recall import RecallResult

_HEADERS = {
    True: ("=== 长期记忆 ===", "=== 当前会话摘要 ===", "=== 回忆结果 ({}) ==="),
    False: ("=== Long-term memory ===", "=== Current session summary ===", "=== Recall ({}) ==="),
}
NO_HIT = {True: "（记忆无命中）", False: "(no memory hit)"}
# a recall line's head: `#3 (2026-12-01, 4 chats) ` of a session, `  - [2026-12-01] ` of a chat
_RECALL_HEAD = re.compile(r"^\s*(?:#\d+ \([^)]*\)|- \[[^\]]*\])\s*")
# how a summary joins what it holds: chats (` | `), a question and its answer (` → `)
_SUMMARY_JOINS = re.compile(r"\s+(?:\||→)\s+")


def _plain(text: str) -> str:
    return " ".join(text.casefold().split())


def _stands_in(part: str, known: str) -> bool:
    """Whether `part` is in `known` as whole words (a clipped part, ending in "…", as the
    start of its words)."""
    words = re.escape(part.rstrip("…").strip())
    end = "" if part.endswith("…") else r"(?!\w)"
    return bool(words) and re.search(r"(?<!\w)" + words + end, known) is not None


def untold(recall_lines: Sequence[str], told: Sequence[str]) -> list[str]:
    """The recall lines that add something to `told`: a session or chat whose every part
    (its chats, questions and answers, clipped as summaries clip them) already stands in a
    told line is left out, so a fact is not offered twice (once remembered, once recalled)."""
    known = "\n".join(_plain(t) for t in told)
    out = []
    for line in recall_lines:
        parts = [_plain(p) for p in _SUMMARY_JOINS.split(_RECALL_HEAD.sub("", line, count=1))]
        if not all(_stands_in(p, known) for p in parts if p):
            out.append(line)
    return out


def recall_block(result: RecallResult | None, chinese: bool) -> str | None:
    """The recall results under their header, or None when nothing was recalled."""
    if result is None:
        return None
    header = _HEADERS[chinese][2].format(result.scenario.value)
    return "\n".join([header, *(result.lines or [NO_HIT[chinese]])])


def render(
    *,
    preferences: str | None,
    memories: Sequence[str],
    searched: bool,
    summary: str | None,
    recall: str | None,
    chinese: bool,
) -> str | None:
    """The whole block, or None when memory has nothing to say; `searched` with no
    `memories` is written as "no hit"."""
    long_term, current, _ = _HEADERS[chinese]
    lines = [f"- {m}" for m in memories] or ([NO_HIT[chinese]] if searched else [])
    blocks = [
        preferences,
        "\n".join([long_term, *lines]) if lines else None,
        f"{current}\n{summary}" if summary else None,
        recall,
    ]
    present = [b for b in blocks if b]
    return "\n\n".join(present) if present else None
