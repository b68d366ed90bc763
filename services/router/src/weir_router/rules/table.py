"""The intent rule table: its schema, validated with pydantic when it is loaded.

The table ships in the package (`intent_rules.toml`, read with :mod:`importlib.resources`);
:func:`load_table` parses and validates it, so a bad table fails the router's start with an
error that names the rule (an unknown group, a regex that does not compile, a rule without
examples, two rules with one name).
"""

from __future__ import annotations

import re
import tomllib
from importlib.resources import files
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from weir_common.events import Intent, Route
from weir_router.rules.matcher import Matcher, build_matcher

__all__ = [
    "CLASS_GROUPS",
    "SINGLE_GROUPS",
    "Group",
    "RuleSpec",
    "RuleTable",
    "RuleTableError",
    "load_table",
]

Group = Literal[
    "action",
    "data",
    "chat",
    "chat_filler",
    "multi_step",
    "concept",
    "concrete",
    "self_disclosure",
    "about_me",
    "question",
]

CLASS_GROUPS: dict[str, Intent] = {
    "action": Intent.EXTERNAL_ACTION,
    "data": Intent.EXTERNAL_DATA,
    "chat": Intent.CHAT,
}
"""The groups that are classes: each of their rules decides that intent."""

SINGLE_GROUPS = (
    "chat_filler",
    "multi_step",
    "concept",
    "concrete",
    "self_disclosure",
    "about_me",
    "question",
)
"""The groups of exactly one rule each (the guards of the classifier)."""

TABLE_FILE = "intent_rules.toml"


class RuleTableError(ValueError):
    """The rule table is not valid; the message names the rule."""


class RuleSpec(BaseModel):
    """One rule of the table: its terms and the messages it decides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    group: Group
    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()
    regex: tuple[str, ...] = ()
    examples: tuple[str, ...] = Field(min_length=1)
    priority: int = Field(
        default=0, description="The rule's weight in its group: higher is tried first."
    )
    intent: Intent | None = None
    route: Route | None = None

    @model_validator(mode="after")
    def _checked(self) -> RuleSpec:
        if not (self.zh or self.en or self.regex):
            raise ValueError("has no terms (zh, en or regex)")
        implied = CLASS_GROUPS.get(self.group)
        if implied is None and self.intent is None:
            raise ValueError(f"group {self.group!r} needs the `intent` of its examples")
        if implied is not None and self.intent not in (None, implied):
            raise ValueError(f"group {self.group!r} decides {implied}, not {self.intent}")
        try:
            self.matcher()
        except re.error as error:
            raise ValueError(f"a term does not compile: {error}") from error
        return self

    @property
    def expected_intent(self) -> Intent:
        """The intent every example of this rule classifies as."""
        implied = CLASS_GROUPS.get(self.group)
        found = self.intent if self.intent is not None else implied
        assert found is not None  # _checked() made sure
        return found

    def matcher(self) -> Matcher:
        """The compiled matcher of this rule's terms."""
        return build_matcher(self.name, zh=self.zh, en=self.en, regex=self.regex)


class RuleTable(BaseModel):
    """The whole table: settings of the classifier and its rules, in priority order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_scan_chars: int = Field(gt=0)
    chat_leftover_max: int = Field(ge=0)
    context_domains: frozenset[str] = frozenset()
    rule: tuple[RuleSpec, ...]

    @model_validator(mode="after")
    def _whole(self) -> RuleTable:
        names = [spec.name for spec in self.rule]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"rule names must be unique: {', '.join(twice)}")
        for group in (*CLASS_GROUPS, *SINGLE_GROUPS):
            count = len(self.in_group(group))
            if count == 0 or (group in SINGLE_GROUPS and count > 1):
                raise ValueError(f"group {group!r} has {count} rules")
        data = {spec.name for spec in self.in_group("data")}
        unknown = sorted(self.context_domains - data)
        if unknown:
            raise ValueError(f"context_domains names no data rule: {', '.join(unknown)}")
        return self

    def in_group(self, group: str) -> tuple[RuleSpec, ...]:
        """The rules of one group, by priority (highest first), then in table order."""
        found = [spec for spec in self.rule if spec.group == group]
        return tuple(sorted(found, key=lambda spec: -spec.priority))

    def matchers(self, group: str) -> tuple[Matcher, ...]:
        """The compiled matchers of one group, in the order they are tried."""
        return tuple(spec.matcher() for spec in self.in_group(group))


def parse_table(data: dict[str, Any]) -> RuleTable:
    """Validate a parsed table; every rule first on its own, so an error names its rule."""
    rules = data.get("rule")
    if not isinstance(rules, list):
        raise RuleTableError("the table has no [[rule]] entries")
    for index, raw in enumerate(rules):
        name = raw.get("name") if isinstance(raw, dict) else None
        try:
            RuleSpec.model_validate(raw)
        except ValidationError as error:
            raise RuleTableError(f"intent rule {name or f'#{index + 1}'!r}: {error}") from error
    try:
        return RuleTable.model_validate(data)
    except ValidationError as error:
        raise RuleTableError(f"intent rule table: {error}") from error


def load_table(text: str | None = None) -> RuleTable:
    """Parse and validate `text`, or the table shipped in this package."""
    if text is None:
        text = files("weir_router.rules").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RuleTableError(f"intent rule table is not TOML: {error}") from error
    return parse_table(data)
