"""The compiled tables of the rule-based intent classifier (F02, seed 002).

The rules themselves are data (`weir_router/rules/intent_rules.toml`, validated by
:mod:`weir_router.rules.table`); :meth:`IntentRules.default` compiles that table once, and
:mod:`weir_router.intent` applies it. Custom tables for tests or tenants are built with
:func:`build_matcher` and :func:`dataclasses.replace`, or from another table with
:meth:`IntentRules.from_table`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from weir_router.rules.matcher import Matcher, build_matcher, compile_terms, content_length
from weir_router.rules.table import RuleTable, load_table

__all__ = ["IntentRules", "Matcher", "build_matcher", "compile_terms", "content_length"]


@dataclass(frozen=True, slots=True)
class IntentRules:
    """All tables of the classifier, precompiled; build custom ones for tests or tenants.

    Attributes:
        action: matchers of ``external_action`` (operations on external systems).
        data: matchers of ``external_data``; each matcher is one data domain.
        chat: matchers of ``chat`` (greetings, thanks, small talk, acknowledgements).
        chat_filler: words ignored when deciding whether a message is *mostly* greeting.
        chat_leftover_max: at most this many content characters (letters, digits, CJK) may be
            left once greetings and filler are removed for the message to stay ``chat``.
        multi_step: markers of a request for several things at once (data → ReAct route).
        context_domains: data domains that never count towards "several things" (the time
            window qualifies another request, it is not one).
        concept: conceptual-question markers ("什么是", "explain", "difference between").
        concrete: markers of a concrete target (service name, time window, "our", "now").
            A conceptual question with no concrete target is knowledge, even if it names an
            operation or a data source ("what is a trace id?").
        self_disclosure: the user telling about themselves ("我叫", "I love"): chat, when
            the message asks nothing (``question`` finds nothing).
        question: question words and marks.
        about_me: questions about the user ("我叫什么", "what is my name"): chat, answered
            from the conversation and memory rather than the knowledge base.
        max_scan_chars: only this many leading characters are scanned, which bounds latency.
    """

    action: tuple[Matcher, ...]
    data: tuple[Matcher, ...]
    chat: tuple[Matcher, ...]
    chat_filler: Matcher
    chat_leftover_max: int
    multi_step: Matcher
    context_domains: frozenset[str]
    concept: Matcher
    concrete: Matcher
    self_disclosure: Matcher
    question: Matcher
    about_me: Matcher
    max_scan_chars: int

    @classmethod
    def default(cls) -> IntentRules:
        """Return the built-in Chinese and English tables (compiled once)."""
        return _default()

    @classmethod
    def from_table(cls, table: RuleTable) -> IntentRules:
        """Compile a validated rule table."""

        def only(group: str) -> Matcher:
            (matcher,) = table.matchers(group)
            return matcher

        return cls(
            action=table.matchers("action"),
            data=table.matchers("data"),
            chat=table.matchers("chat"),
            chat_filler=only("chat_filler"),
            chat_leftover_max=table.chat_leftover_max,
            multi_step=only("multi_step"),
            context_domains=table.context_domains,
            concept=only("concept"),
            concrete=only("concrete"),
            self_disclosure=only("self_disclosure"),
            question=only("question"),
            about_me=only("about_me"),
            max_scan_chars=table.max_scan_chars,
        )


@cache
def _default() -> IntentRules:
    return IntentRules.from_table(load_table())
