"""Recall fused (issue 16): extracted memories and the turn log, one ranked list.

Reciprocal rank fusion (:func:`weir_common.search.fusion.rrf`, the knowledge service's) of
the memories ranked by seed 000's score (similarity and importance, decayed) and of the
log's rankings. Deduplicated by provenance: a turn a memory came from counts for that memory
(their ranks add up) and is shown under it as a supporting turn with its date, instead of a
second entry.

A turn that says what a better one said (a question asked twice) is left out. A turn that
asks keeps `question_weight` ** (the share of its clauses that ask) of its fused score: 0.5
of it for a bare question, 0.79 for a remark with a question after it. Asked again in other
words, an earlier question is nearer the new one than the remark that answers it, and on
the LoCoMo dev conversations evidence turns ask half as often as turns do (12% to 26%).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from weir_common.search.fusion import RRF_K, rrf

from ..log.store import LoggedChat
from .models import CATEGORY_LABELS, Recalled
from .text import is_question, sentences

TURN_CHARS = 300
_CLAUSE = re.compile(r"[,，、]\s*")


@dataclass(frozen=True)
class Entry:
    """One recalled thing: a memory with the turns behind it, or a turn of the log."""

    score: float
    memory: Recalled | None = None
    turns: list[LoggedChat] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        """The run ids behind the entry (provenance)."""
        runs = self.memory.item.source_runs if self.memory else []
        return list(dict.fromkeys([*runs, *(t.run_id for t in self.turns)]))


def fuse(
    memories: Sequence[Recalled],
    turn_rankings: Sequence[tuple[Sequence[str], float]],
    chats: Mapping[str, LoggedChat],
    k: int,
    *,
    memory_weight: float = 1.0,
    turns_per_memory: int = 2,
    rrf_k: int = RRF_K,
    question_weight: float = 1.0,
) -> list[Entry]:
    """The best `k` entries of memories and turns fused; a turn of the log that asks keeps
    `question_weight` ** (the share of its clauses that ask) of its fused score."""
    cited: dict[str, str] = {}
    for m in memories:  # best memory first: a turn behind two memories counts for the better
        for run in m.item.source_runs:
            cited.setdefault(run, m.item.id)

    def key(x: Recalled | str) -> Hashable:
        if isinstance(x, str):
            return ("m", cited[x]) if x in cited else ("t", x)
        return ("m", x.item.id)

    rankings: list[tuple[Sequence[Recalled | str], float]] = [(memories, memory_weight)]
    rankings += [([r for r in runs if r in chats], w) for runs, w in turn_rankings]
    best_rank: dict[str, int] = {}
    for runs, _ in turn_rankings:
        for rank, run in enumerate(runs):
            best_rank[run] = min(rank, best_rank.get(run, rank))

    def weighed(item: Recalled | str, score: float) -> float:
        if not isinstance(item, str) or item in cited:
            return score
        return score * math.pow(question_weight, asking(chats[item].user_input))

    fused = [(item, weighed(item, score)) for item, score in rrf(rankings, key, rrf_k)]
    fused.sort(key=lambda pair: pair[1], reverse=True)  # stable: ties keep RRF's order
    entries: list[Entry] = []
    said: set[str] = set()
    for item, score in fused:
        if len(entries) == k:
            break
        if isinstance(item, str) and item not in cited:
            words = _said(chats[item].user_input)
            if words not in said:  # the same words again (a question asked twice) add nothing
                said.add(words)
                entries.append(Entry(score, None, [chats[item]]))
            continue
        memory = item if not isinstance(item, str) else next(
            m for m in memories if m.item.id == cited[item])  # fmt: skip
        behind = sorted((r for r, mid in cited.items() if mid == memory.item.id and r in chats
                         and r in best_rank), key=lambda r: best_rank[r])  # fmt: skip
        entries.append(Entry(score, memory, [chats[r] for r in behind[:turns_per_memory]]))
    return entries


def asking(text: str) -> float:
    """The share of the text's clauses (sentences cut at commas) that are questions: "btw my
    sister just moved to Lisbon, anyway, what is a good pasta recipe?" asks a third."""
    said = [c for s in sentences(text) for c in _CLAUSE.split(s) if c.strip()]
    return sum(map(is_question, said)) / len(said) if said else 0.0


def telling(entries: Sequence[Entry]) -> list[Entry]:
    """The entries that tell something: every memory, and each logged turn that does not
    wholly ask (an earlier "Where does Mia live now?" is no fact to offer as remembered)."""
    return [e for e in entries if e.memory is not None or asking(e.turns[0].user_input) < 1.0]


def _said(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip("?？!！。. ")


def _clip(text: str, limit: int = TURN_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def turn_line(chat: LoggedChat) -> str:
    """A turn with its date: `2023-05-08: I went hiking… → That sounds lovely.`"""
    reply = f" → {_clip(chat.ai_reply, 120)}" if chat.ai_reply.strip() else ""
    return f"{chat.created_at:%Y-%m-%d}: {_clip(chat.user_input)}{reply}"


def render(entries: Sequence[Entry], chinese: bool) -> list[str]:
    """One block per entry: a memory's line with its supporting turns indented under it, or
    a turn of the log with its date."""
    out = []
    for e in entries:
        if e.memory is None:
            out.append(turn_line(e.turns[0]))
            continue
        item = e.memory.item
        zh, en = CATEGORY_LABELS[item.category]
        line = f"[{zh if chinese else en}] {item.content} ({item.created_at:%Y-%m-%d})"
        out.append("\n".join([line, *(f"  > {turn_line(t)}" for t in e.turns)]))
    return out
