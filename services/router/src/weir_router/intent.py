"""Rule-based intent classifier of the router (F02, seed 002 "意图识别").

Four classes, decided by keyword and regex tables (the data table
`weir_router/rules/intent_rules.toml`, compiled by :mod:`weir_router.intent_rules`) with the
priority ``external_action > external_data > chat > knowledge``:

* ``external_action`` — an operation on an external system ("重启 user-service") → ReAct;
* ``external_data`` — real data from an external system ("查下最近15分钟的错误日志") → a
  single tool, or ReAct when several things are asked at once (logs *and* metrics, "对比",
  "and then");
* ``chat`` — greetings and small talk, only when the message is mostly that ("你好") → plain
  chat;
* ``knowledge`` — everything else, the default ("Python 协程和线程有什么区别？") → RAG.

Two refinements keep the priority honest:

* a conceptual question with no concrete target ("what is a trace id?", "重启和热加载有什么
  区别") is knowledge even though it names an operation or a data source;
* an empty or whitespace-only message is ``chat`` (rule ``default:empty``): there is nothing to
  retrieve and no tool to call, so the cheapest route asks the user what they need.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from weir_common.events import Intent, Route
from weir_router.intent_rules import IntentRules
from weir_router.rules.matcher import Matcher, content_length

__all__ = ["ROUTE_OF_INTENT", "Classification", "IntentClassifier"]

ROUTE_OF_INTENT: dict[Intent, Route] = {
    Intent.CHAT: Route.PLAIN_CHAT,
    Intent.KNOWLEDGE: Route.RAG,
    Intent.EXTERNAL_DATA: Route.SINGLE_TOOL,
    Intent.EXTERNAL_ACTION: Route.REACT,
}
"""The route of each intent; ``external_data`` may be promoted to ``REACT``."""

_SHORT_LABEL: dict[Intent, str] = {
    Intent.CHAT: "chat",
    Intent.KNOWLEDGE: "knowledge",
    Intent.EXTERNAL_DATA: "data",
    Intent.EXTERNAL_ACTION: "action",
}

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Classification:
    """The decision for one message.

    Attributes:
        intent: the winning class.
        route: how the run answers.
        rule: which rule decided, ``"<class>:<group>:<matched text>"`` (e.g.
            ``"action:restart:重启"``, ``"data:logs:错误日志"``), or ``"default:knowledge"``,
            ``"default:empty"``, ``"knowledge:concept:<marker>"``.
        matches: every class whose tables matched, in priority order, before the guards
            (a greeting in a long question, an operation named in a conceptual question), for
            run records. Empty when nothing matched.
    """

    intent: Intent
    route: Route
    rule: str
    matches: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Hit:
    """One matcher that fired: its group name and the text it matched."""

    group: str
    text: str


def _normalize(text: str, max_chars: int) -> str:
    """NFKC-normalize (full-width → half-width), lower-case and cut to the scanned prefix."""
    return unicodedata.normalize("NFKC", text[:max_chars]).lower()


def _hits(matchers: Sequence[Matcher], text: str) -> list[_Hit]:
    """Return every matcher of a class that fires on ``text``, in table order."""
    found: list[_Hit] = []
    for matcher in matchers:
        matched = matcher.find(text)
        if matched is not None:
            found.append(_Hit(matcher.name, matched))
    return found


def _first_hit(matchers: Sequence[Matcher], text: str) -> _Hit | None:
    """Return the first matcher of a class that fires on ``text``."""
    for matcher in matchers:
        matched = matcher.find(text)
        if matched is not None:
            return _Hit(matcher.name, matched)
    return None


def _rule(intent: Intent, hit: _Hit) -> str:
    """Format the rule label of a hit, e.g. ``action:restart:重启``."""
    text = _WHITESPACE.sub(" ", hit.text.strip())
    return f"{_SHORT_LABEL[intent]}:{hit.group}:{text}"


class IntentClassifier:
    """Classify a message into one of the four intents and choose its route.

    Stateless and thread-safe; all patterns are precompiled in :class:`IntentRules`.
    """

    def __init__(self, rules: IntentRules | None = None) -> None:
        """Use ``rules``, or the built-in Chinese and English tables."""
        self._rules = rules if rules is not None else IntentRules.default()

    @property
    def rules(self) -> IntentRules:
        """The tables this classifier uses."""
        return self._rules

    def classify(self, text: str) -> Classification:
        """Classify ``text``: action > data > chat > knowledge."""
        rules = self._rules
        scanned = _normalize(text, rules.max_scan_chars)
        if not scanned.strip():
            return Classification(Intent.CHAT, Route.PLAIN_CHAT, "default:empty", ())
        action = _first_hit(rules.action, scanned)
        data = _hits(rules.data, scanned)
        chat = _hits(rules.chat, scanned)
        matches = tuple(
            str(intent)
            for intent, fired in (
                (Intent.EXTERNAL_ACTION, action is not None),
                (Intent.EXTERNAL_DATA, bool(data)),
                (Intent.CHAT, bool(chat)),
            )
            if fired
        )
        concept = self._conceptual(scanned) if action or data else None
        if action is not None and concept is None:
            return self._decide(
                Intent.EXTERNAL_ACTION, _rule(Intent.EXTERNAL_ACTION, action), matches
            )
        if data and concept is None:
            return self._data(scanned, data, matches)
        chat_rule = self._chat_rule(scanned, chat)
        if chat_rule is not None:
            return self._decide(Intent.CHAT, chat_rule, matches)
        if concept is not None:
            return self._decide(Intent.KNOWLEDGE, f"knowledge:concept:{concept}", matches)
        return self._decide(Intent.KNOWLEDGE, "default:knowledge", matches)

    def _decide(self, intent: Intent, rule: str, matches: tuple[str, ...]) -> Classification:
        """Build the classification with the intent's usual route."""
        return Classification(intent, ROUTE_OF_INTENT[intent], rule, matches)

    def _data(self, text: str, hits: list[_Hit], matches: tuple[str, ...]) -> Classification:
        """Classify an ``external_data`` message: one tool, or ReAct for several things."""
        rules = self._rules
        domains = [hit for hit in hits if hit.group not in rules.context_domains]
        lead = domains[0] if domains else hits[0]
        multi = len(domains) >= 2 or rules.multi_step.find(text) is not None
        route = Route.REACT if multi else Route.SINGLE_TOOL
        return Classification(
            Intent.EXTERNAL_DATA, route, _rule(Intent.EXTERNAL_DATA, lead), matches
        )

    def _conceptual(self, text: str) -> str | None:
        """Return the concept marker of a conceptual question with no concrete target."""
        marker = self._rules.concept.find(text)
        if marker is None or self._rules.concrete.find(text) is not None:
            return None
        return _WHITESPACE.sub(" ", marker)

    def _chat_rule(self, text: str, chat: list[_Hit]) -> str | None:
        """The rule that makes ``text`` chat: small talk, a question about the user, or the
        user telling about themselves without asking anything; None when it is not chat."""
        rules = self._rules
        if chat and self._mostly_chat(text):
            return _rule(Intent.CHAT, chat[0])
        about_me = rules.about_me.find(text)
        if about_me is not None:
            return f"chat:about_me:{about_me}"
        disclosed = rules.self_disclosure.find(text)
        if disclosed is not None and rules.question.find(text) is None:
            return f"chat:self:{disclosed}"
        return None

    def _mostly_chat(self, text: str) -> bool:
        """Whether the message is mostly greeting / small talk (little else is left)."""
        rest = text
        for matcher in self._rules.chat:
            rest = matcher.remove(rest)
        rest = self._rules.chat_filler.remove(rest)
        return content_length(rest) <= self._rules.chat_leftover_max
