"""Summaries: turns compressed out of the short-term window (F30), chats and sessions (F35).

The FLASH model writes the compression summary when one is configured; otherwise, and when it
fails, an extractive summary keeps the first sentence of each message. Chat and session
summaries are always extractive: they are written on every turn and must cost nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from weir_common.events import Turn
from weir_common.llm.fence import fence

from .flash import Flash
from .longterm.text import is_chinese

_SENTENCE = re.compile(r"^.+?(?:[。.!！?？\n]|$)", re.DOTALL)
MAX_SUMMARY_CHARS = 1200
MAX_SESSION_CHARS = 600


def first_sentence(text: str, limit: int = 120) -> str:
    """The first sentence of `text`, at most `limit` characters."""
    match = _SENTENCE.match(text.strip())
    sentence = (match.group(0) if match else text).strip()
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def _clip_front(text: str, limit: int) -> str:
    """Keep the end of `text` (the newest part) within `limit` characters."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def extractive(previous: str | None, turns: Sequence[Turn]) -> str:
    """The previous summary plus one line per turn, newest kept when too long."""
    zh = any(is_chinese(t.user) for t in turns)
    user, assistant = ("用户", "助手") if zh else ("user", "assistant")
    lines = [f"{user}: {first_sentence(t.user)} / {assistant}: {first_sentence(t.assistant)}"
             for t in turns]  # fmt: skip
    return _clip_front("\n".join([*([previous] if previous else []), *lines]), MAX_SUMMARY_CHARS)


_COMPRESS = (
    "Update the running summary of a conversation with the turns that leave the short-term "
    "window. Keep names, facts, decisions and open questions; drop pleasantries. Write in the "
    "conversation's language, at most 8 short lines. Reply with the summary only."
)


class Summarizer:
    """Compresses turns leaving the short-term window into the conversation's summary."""

    def __init__(self, flash: Flash) -> None:
        self._flash = flash

    async def compress(self, previous: str | None, turns: Sequence[Turn]) -> str:
        """The new summary: FLASH when available, extractive otherwise."""
        dialogue = "\n".join(f"user: {t.user}\nassistant: {t.assistant}" for t in turns)
        # escaped and fenced (F04): the turns are the users' words, the summary came from them
        prompt = f"{fence('summary', previous or '')}\n{fence('turns', dialogue)}"
        answer = await self._flash.text("compress", _COMPRESS, prompt)
        return _clip_front(answer, MAX_SUMMARY_CHARS) if answer else extractive(previous, turns)


#: The longest user message embedded whole (the offline analyzer keeps as much of it).
CHAT_TEXT_CHARS = 1000


def chat_text(user_text: str) -> str:
    """What a chat's vector (seed 001 `chats.summary_embedding`) stands for: the user's
    message. What a user later asks about is what they said; the reply's words are in the
    log's BM25 index and in the summary line. The offline analyzer's memory of a turn is
    this same text, so one embedding serves both."""
    return user_text.strip()[:CHAT_TEXT_CHARS]


def chat_summary(user_text: str, assistant_text: str) -> str:
    """One line per chat (seed 001 `chats.summary`): the question and the answer's gist."""
    if not assistant_text.strip():  # nothing to pair it with: the message itself
        text = user_text.strip()
        return text if len(text) <= 300 else text[:299] + "…"
    return f"{first_sentence(user_text, 200)} → {first_sentence(assistant_text, 120)}"


def turn_detail(turn: Turn, limit: int = 2000) -> str:
    """An event's detail (seed 002): the turn it came from, both sides, clipped."""
    text = f"user: {turn.user.strip()}\nassistant: {turn.assistant.strip()}".strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def session_summary(title: str, recent_chats: Sequence[str]) -> str:
    """The rolling summary of a session: how it began, then its latest chats."""
    parts = [title, *[c for c in recent_chats if c != title]]
    return _clip_front(" | ".join(p for p in parts if p), MAX_SESSION_CHARS)
