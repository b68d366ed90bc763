"""When to recall past sessions and which of seed 001's four scenarios applies.

Triple detection: the `/recall` command, keywords ("之前", "聊过", "记得"…), or (checked by
the caller, it needs vectors) a past chat at similarity ≥ 0.7. Then:
RecallHistory "之前聊过什么?", RecallTopic "谈论过 xxx?", RecallSession "那次还说过什么?"
and RecallWithinSession "xxx 呢?" (the last two about the session recalled last).

Only an explicit recall (command or words) puts a session in focus, and "xxx 呢?" refers to
it only for a few turns after it: a short "…呢?" is everyday chat ("你呢？" is "and you?").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .repository import Chat, Session


class Scenario(StrEnum):
    """Seed 001's four recall scenarios."""

    HISTORY = "RecallHistory"
    TOPIC = "RecallTopic"
    SESSION = "RecallSession"
    WITHIN = "RecallWithinSession"


@dataclass(frozen=True)
class Trigger:
    """A detected recall: the scenario, its topic text, the session it is about."""

    scenario: Scenario
    topic: str = ""
    session: str | None = None
    reason: str = "keyword"


@dataclass(frozen=True)
class Focus:
    """The session recalled last, and whether the user may still be following up on it."""

    session: str
    fresh: bool = False


@dataclass(frozen=True)
class RecallResult:
    """Lines to show the model, and the session the user is now talking about."""

    scenario: Scenario
    lines: list[str] = field(default_factory=list)
    focus: str | None = None
    sources: list[str] = field(default_factory=list)  # run ids of the chats shown


ENGLISH_KEYWORDS = ("remember", "last time", "we talked", "we discussed", "did i mention",
                    "earlier", "previously")  # fmt: skip
_HISTORY = re.compile(
    r"(?:之前|以前|上次|过去)?(?:都|我们)?聊(?:过|了)(?:些)?什么|"
    r"what (?:did|have) we (?:talk|chat|discuss)(?:ed)?(?: about)?"
    r"|what have we (?:talked|discussed)",
    re.I,
)
_SESSION = re.compile(
    r"那次|那一次|那个会话|那个对话|that (?:time|conversation|session)|what else", re.I
)
_WITHIN = re.compile(
    r"^\s*(.{1,20}?)呢\s*[?？]?\s*$|^\s*(?:and|what about|how about)\s+(.{1,60}?)\?*\s*$", re.I
)
# "你呢？", "那他呢？", "what about you?": a person, not a topic of the recalled session.
_PERSON = re.compile(
    r"^(?:那|那么|还有)?(?:你|您|我|他|她|它)(?:们|自己)?$|^(?:you|me|him|her|them|us|yourself)$",
    re.I,
)


def detect(text: str, keywords: Sequence[str], focus: Focus | None) -> Trigger | None:
    """The recall this message asks for, by command or words; None when it asks for none."""
    stripped = text.strip()
    if stripped.startswith("/recall"):
        return _command(stripped.removeprefix("/recall").strip(), focus)
    if _HISTORY.search(stripped):
        return Trigger(Scenario.HISTORY)
    if focus and _SESSION.search(stripped):
        return Trigger(Scenario.SESSION, session=focus.session)
    if focus and focus.fresh and (within := _within(stripped)):
        return Trigger(Scenario.WITHIN, topic=within, session=focus.session)
    lowered = stripped.lower()
    if any(k.lower() in lowered for k in (*keywords, *ENGLISH_KEYWORDS)):
        return Trigger(Scenario.TOPIC, topic=stripped)
    return None


def _within(text: str) -> str | None:
    """The topic of a short follow-up ("大阪呢？" → "大阪"), None for a person or no match."""
    match = _WITHIN.match(text)
    topic = (match.group(1) or match.group(2)).strip() if match else ""
    return topic if topic and not _PERSON.match(topic) else None


def _command(args: str, focus: Focus | None) -> Trigger:
    session = focus.session if focus else None
    if not args:
        return Trigger(Scenario.HISTORY, reason="command")
    if args.startswith("session"):
        target = args.removeprefix("session").strip() or session
        return Trigger(Scenario.SESSION, session=target, reason="command")
    if args.startswith("within") and session:
        return Trigger(Scenario.WITHIN, args.removeprefix("within").strip(), session, "command")
    return Trigger(Scenario.TOPIC, topic=args, reason="command")


def render_session(session: Session) -> str:
    """`#3 (2026-12-01, 4 chats) title: summary`."""
    return (f"#{session.id} ({session.updated_at:%Y-%m-%d}, {session.chat_count} chats) "
            f"{session.summary or session.title}")  # fmt: skip


def render_chat(chat: Chat) -> str:
    """`  - [2026-12-01] summary`."""
    return f"  - [{chat.created_at:%Y-%m-%d}] {chat.summary}"
