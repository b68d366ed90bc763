"""The honest offline responder: used when no language model is configured.

It never generates facts. It says plainly that no model is configured, then quotes what the
tools returned for this turn (always: the run called them for this question, whatever its
language), the evidence passages, memory facts and earlier turns that overlap with the
question, states the capability notes in the user's language, and admits when it has nothing
relevant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from weir_common.llm.notes_i18n import localize_note
from weir_common.llm.relevance import Language, best_excerpt, detect_language, rank

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|good (morning|afternoon|evening)|greetings|howdy|"
    r"你好|您好|嗨|哈喽|早上好|下午好|晚上好)(\s+there)?[\s!！,，.。~～]*$",
    re.IGNORECASE,
)
_META_HISTORY = re.compile(
    r"\b(earlier|before|previous(ly)?|i (said|told|mentioned)|my name|remember)\b|"
    r"之前|刚才|前面|我说过|我的名字|记得",
    re.IGNORECASE,
)
_MAX_PASSAGES = 3
_MAX_FACTS = 3
_MAX_TURNS = 2
_MAX_TOOL_CHARS = 1500
_MIN_ECHO_CHARS = 12  # a shorter question ("why?") may well appear inside a real memory


class EvidencePassage(BaseModel):
    """One retrieved passage: where it comes from and what it says."""

    source: str
    locator: str = ""
    text: str


class ToolResult(BaseModel):
    """What one tool call of this turn returned (an error is a result too)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str
    is_error: bool = False


class OfflineRequest(BaseModel):
    """Everything the offline responder may draw on."""

    question: str
    history: list[tuple[str, str]] = Field(default_factory=list)
    memory_facts: list[str] = Field(default_factory=list)
    evidence: list[EvidencePassage] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    capability_notes: list[str] = Field(default_factory=list)
    language: Language | None = None


_TEXT: dict[Language, dict[str, str]] = {
    "en": {
        "intro": (
            "No language model is configured, so this is an offline, evidence-based reply: "
            "I can only quote what the available sources say, not write a new answer."
        ),
        "greeting": "Hello! I'm glad to help as far as the connected sources allow.",
        "asked": 'You asked: "{q}"',
        "tools": "What the tools returned for this question:",
        "failed": "(failed)",
        "evidence": "Relevant passages I found:",
        "quote": '"{x}"',
        "facts": "What I remember that may be relevant:",
        "said": 'Earlier in this conversation you said: "{u}"',
        "answered": 'and I replied: "{a}"',
        "notes": "Please note:",
        "nothing": (
            "I have no evidence to answer this question: none of the available sources, "
            "memories or earlier messages mention it."
        ),
    },
    "zh": {
        "intro": (
            "当前没有配置语言模型，因此这是一条离线的、基于现有资料的回复："
            "我只能引用资料中的原文，无法生成新的回答。"
        ),
        "greeting": "你好！我会在已连接资料的范围内尽力帮助你。",
        "asked": "你的问题是：“{q}”",
        "tools": "工具为这个问题返回的结果：",
        "failed": "（调用失败）",
        "evidence": "找到的相关资料：",
        "quote": "“{x}”",
        "facts": "我记得的可能相关的信息：",
        "said": "你在之前的对话中说过：“{u}”",
        "answered": "我当时回复：“{a}”",
        "notes": "请注意：",
        "nothing": (
            "我没有可以回答这个问题的依据：现有的资料、记忆和之前的对话中都没有提到相关内容。"
        ),
    },
}


def _clip(text: str, max_chars: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1].rstrip() + "…"


def _citation(p: EvidencePassage) -> str:
    return f"[{p.source}, {p.locator}]" if p.locator else f"[{p.source}]"


def _not_asked_again(question: str, facts: list[str]) -> list[str]:
    """The facts that are not this same question asked before. An earlier asking repeats
    every word of the question, so it would outrank, and hide, the memory that answers it."""
    asked = " ".join(question.casefold().split())
    if len(asked) < _MIN_ECHO_CHARS:
        return facts
    return [f for f in facts if asked not in " ".join(f.casefold().split())]


def _relevant_turns(req: OfflineRequest) -> list[tuple[str, str]]:
    users = [u for u, _ in req.history]
    picked = rank(req.question, users, _MAX_TURNS)
    if not picked and req.history and _META_HISTORY.search(req.question):
        picked = list(range(max(0, len(users) - _MAX_TURNS), len(users)))
    return [req.history[i] for i in sorted(picked)]


def offline_answer(req: OfflineRequest) -> str:
    """Compose the deterministic offline reply for ``req`` (see module docstring)."""
    lang: Language = req.language or detect_language(req.question)
    t = _TEXT[lang]
    parts: list[str] = [t["intro"]]
    greeting = bool(_GREETING.match(req.question))
    if greeting:
        parts.append(t["greeting"])
    elif req.question.strip():
        parts.append(t["asked"].format(q=_clip(req.question)))

    found = bool(req.tool_results)
    if req.tool_results:
        parts.append(_tool_section(req.tool_results, t))
    passages = rank(req.question, [p.text for p in req.evidence], _MAX_PASSAGES)
    if passages:
        found = True
        lines = [t["evidence"]]
        for n, i in enumerate(passages, start=1):
            p = req.evidence[i]
            quote = t["quote"].format(x=best_excerpt(req.question, p.text))
            lines.append(f"{n}. {quote} {_citation(p)}")
        parts.append("\n".join(lines))

    kept = _not_asked_again(req.question, req.memory_facts)
    facts = rank(req.question, kept, _MAX_FACTS)
    if facts:
        found = True
        parts.append("\n".join([t["facts"], *(f"- {kept[i]}" for i in facts)]))

    for user, assistant in _relevant_turns(req):
        found = True
        said = t["said"].format(u=_clip(user))
        if assistant.strip():
            said = f"{said} — {t['answered'].format(a=_clip(assistant))}"
        parts.append(said)

    if not found and not greeting:
        parts.append(t["nothing"])
    if req.capability_notes:
        notes = [localize_note(note, lang) for note in req.capability_notes]
        parts.append("\n".join([t["notes"], *(f"- {note}" for note in notes)]))
    return "\n\n".join(parts)


def _tool_section(results: list[ToolResult], t: dict[str, str]) -> str:
    lines = [t["tools"]]
    for n, result in enumerate(results, start=1):
        call = f"{result.tool}({json.dumps(result.arguments, ensure_ascii=False)})"
        failed = f" {t['failed']}" if result.is_error else ""
        content = result.content.strip()
        if len(content) > _MAX_TOOL_CHARS:
            content = content[:_MAX_TOOL_CHARS].rstrip() + "…"
        lines.append(f"{n}. {call}{failed}:\n{content}")
    return "\n".join(lines)


def stream_text(text: str, chunk_chars: int = 24) -> Iterator[str]:
    """Yield ``text`` in pieces of at most ``chunk_chars`` characters (joined == text)."""
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be >= 1")
    for start in range(0, len(text), chunk_chars):
        yield text[start : start + chunk_chars]
