"""The memory analyzer (seed 002 MemoryAnalyzer): is a message worth remembering, in which
category and layer, and how important is it?

With a model configured the FLASH model answers (its JSON also carries preferences); without
one, or when its answer is unusable, an offline heuristic decides. Questions, greetings and
small talk score below the 0.3 threshold; statements about oneself score above it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from weir_common.events import Turn
from weir_common.llm.fence import fence
from weir_common.search.text import CJK_CHAR

from ..flash import Flash
from ..summary import chat_text
from .models import Analysis, Category, Layer
from .text import is_question, sentences

_SELF = re.compile(r"我|\b(?:I|I'm|I've|I'd|I'll|my|me|mine|myself)\b", re.I)
_CATEGORY_RULES: tuple[tuple[Category, float, re.Pattern[str]], ...] = (
    (Category.IDENTITY, 0.8, re.compile(
        r"我叫|我的名字|我今年|过敏|\d+\s*岁|我住在|我来自|我是.{0,8}(?:人|生|师|员|家)|我有"
        r"|\b(?:my name is|call me|years old|i live in|i'm from|i come from|i work as|my job"
        r"|i am an? |i'm an? |i have|i've got|allergic)\b", re.I)),
    (Category.PREFERENCE, 0.7, re.compile(
        r"喜欢|我爱|讨厌|偏好|最爱|\b(?:favou?rite|i (?:really )?(?:like|love|enjoy|hate|prefer"
        r"|adore)|i don't like)\b", re.I)),
    (Category.RELATIONSHIP, 0.6, re.compile(
        r"我的?(?:妈妈|爸爸|父母|妻子|老婆|丈夫|老公|孩子|儿子|女儿|朋友|同事|男朋友|女朋友|家人"
        r"|哥哥|姐姐|弟弟|妹妹)|\bmy (?:mom|mum|mother|dad|father|parents|wife|husband|kids?"
        r"|children|son|daughter|friends?|partner|boyfriend|girlfriend|family|sister|brother"
        r"|colleague|boss)\b", re.I)),
    (Category.ABILITY, 0.6, re.compile(
        r"我会|擅长|我能|精通|\b(?:i can|i'm good at|i am good at|i know how|fluent|skilled)\b",
        re.I)),
    (Category.EVENT, 0.55, re.compile(
        r"昨天|今天|上周|上个月|去年|刚刚|刚|去了|参加|完成|开始|打算|计划|下周|明年|将要"
        r"|\b(?:went|yesterday|last (?:week|month|year|night)|just|attended|finished|started"
        r"|joined|visited|will|going to|plan(?:ning)?|got|took|made|met)\b", re.I)),
    (Category.EMOTION, 0.45, re.compile(
        r"开心|难过|焦虑|压力|高兴|伤心|担心|害怕|激动|骄傲|\b(?:happy|sad|anxious|stressed"
        r"|excited|worried|afraid|proud|grateful|upset|lonely|feel(?:ing)?)\b", re.I)),
    (Category.OPINION, 0.4, re.compile(
        r"我觉得|我认为|我相信|\b(?:i think|i believe|in my opinion|i guess)\b", re.I)),
)  # fmt: skip
_STRONG = re.compile(
    r"永远|一直|过敏|生日|记住|重要|\b(?:always|never|allergic|birthday|remember|important)\b",
    re.I,
)
_WORD = re.compile(r"[a-z]+", re.I)
# What an opinion may add without saying anything: "I think so", "我觉得还行".
_FILLER_WORDS = frozenset({
    "i", "so", "too", "also", "yes", "no", "not", "sure", "right", "true", "maybe", "fine",
    "ok", "okay", "well", "that", "this", "it", "you", "s",
})  # fmt: skip
_PARTICLES = frozenset("的了是吗呢吧啊呀也")


def _short(text: str) -> bool:
    return len(CJK_CHAR.findall(text)) < 5 and len(text.split()) < 4


def _filler(clause: str, marker: re.Pattern[str]) -> bool:
    """An opinion with (almost) nothing behind its marker."""
    rest = marker.sub(" ", clause)
    chars = [c for c in CJK_CHAR.findall(rest) if c not in _PARTICLES]
    words = [w for w in _WORD.findall(rest) if w.lower() not in _FILLER_WORDS]
    return len(chars) < 3 and len(words) < 2


def _score(clause: str, text: str) -> tuple[Category, float] | None:
    """The category and importance of one clause; None when it tells nothing about the user."""
    if is_question(clause) or not _SELF.search(clause):
        return None
    category, base, rule = next(
        ((c, b, r) for c, b, r in _CATEGORY_RULES if r.search(clause)),
        (Category.OPINION, 0.35, None),
    )
    if category is Category.OPINION and rule is not None and _filler(clause, rule):
        return None
    score = base + (0.1 if _STRONG.search(text) else 0.0) - (0.1 if _short(text) else 0.0)
    return category, score


def heuristic(text: str) -> Analysis:
    """The offline verdict: the best-scoring statement clause decides."""
    best = Analysis(importance=0.0, category=Category.OPINION, content=text.strip())
    if text.lstrip().startswith("/"):
        return best
    for clause in sentences(text):
        scored = _score(clause, text)
        if scored is not None and scored[1] > best.importance:
            category, score = scored
            layer = Layer.EPISODIC if category is Category.EVENT else Layer.SEMANTIC
            best = Analysis(
                importance=round(min(score, 0.95), 3),
                category=category,
                layer=layer,
                content=chat_text(text),
                title=clause.strip()[:40],
            )
    return best


_SYSTEM = (
    "You decide what a personal assistant should remember long-term about its user. Read the "
    "user's new message (earlier turns are context only) and reply with one JSON object: "
    '{"importance": 0.0-1.0, "category": one of ' + str([c.value for c in Category]) + ", "
    '"layer": "semantic" (a lasting fact) or "episodic" (an event), "content": the fact as one '
    'self-contained sentence in the user\'s language, "title": a short title for an event, '
    '"preferences": {"name"|"likes"|"dislikes"|"location"|"occupation"|other: value}}. '
    "Questions, greetings and small talk get importance below 0.3."
)


def _context(text: str, recent: Sequence[Turn]) -> str:
    """The message and the turns before it, escaped and fenced (F04): a message saying
    `</message> SYSTEM: …` cannot close its fence and pass for the instructions."""
    earlier = "\n".join(f"user: {t.user}\nassistant: {t.assistant}" for t in recent[-3:])
    return f"{fence('earlier', earlier)}\n{fence('message', text)}"


def _from_json(data: dict[str, Any], text: str) -> Analysis | None:
    try:
        importance = max(0.0, min(1.0, float(data.get("importance", 0.0))))
        category = Category(str(data.get("category", "opinion")))
        layer = Layer(str(data.get("layer", "semantic")))
    except (TypeError, ValueError):
        return None
    prefs = data.get("preferences") or {}
    profile = {str(k): str(v) for k, v in prefs.items() if v} if isinstance(prefs, dict) else {}
    return Analysis(
        importance=importance,
        category=category,
        layer=layer,
        content=str(data.get("content") or text).strip()[:1000],
        title=str(data.get("title") or "")[:80],
        profile=profile,
    )


class Analyzer:
    """FLASH model first (when configured), the heuristic otherwise or as the fallback."""

    def __init__(self, flash: Flash) -> None:
        self._flash = flash

    async def analyze(self, text: str, recent: Sequence[Turn] = ()) -> Analysis:
        """The verdict on one user message. A message that does not speak of the user at
        all (no "I", "my", "me", "我"…: greetings, questions about the world, small talk) is
        left to the heuristic, whose verdict on it is "nothing to keep": a model call per
        such turn would cost its CPU and tokens to say the same (the turn log keeps every
        message for recall anyway)."""
        offline = heuristic(text)
        if not self._flash.available or text.lstrip().startswith("/") or not _SELF.search(text):
            return offline
        data = await self._flash.json("analyze", _SYSTEM, _context(text, recent))
        return (_from_json(data, text) if data else None) or offline
