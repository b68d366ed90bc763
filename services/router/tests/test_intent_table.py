"""The intent rule table: every example of every rule routes to that rule's intent, and a bad
table fails its load with an error naming the rule."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from typing import Any

import pytest

from weir_common.events import Intent, Route
from weir_router.intent import IntentClassifier
from weir_router.intent_rules import IntentRules
from weir_router.rules.table import CLASS_GROUPS, RuleSpec, RuleTableError, load_table, parse_table

pytestmark = pytest.mark.unit

TABLE = load_table()

EXAMPLES = [
    pytest.param(spec, example, id=f"{spec.name}:{example}")
    for spec in TABLE.rule
    for example in spec.examples
]


@pytest.fixture(scope="module")
def classifier() -> IntentClassifier:
    return IntentClassifier()


@pytest.mark.parametrize(("spec", "example"), EXAMPLES)
def test_every_example_routes_to_its_rules_intent(
    classifier: IntentClassifier, spec: RuleSpec, example: str
) -> None:
    decided = classifier.classify(example)
    assert decided.intent is spec.expected_intent, decided
    if spec.route is not None:
        assert decided.route is spec.route, decided
    if spec.group in CLASS_GROUPS:
        # a class rule's own example is decided by that very rule
        assert decided.rule.startswith(f"{spec.group}:{spec.name}:"), decided


def test_every_rule_has_examples_and_every_class_is_covered() -> None:
    assert all(spec.examples for spec in TABLE.rule)
    intents = {spec.expected_intent for spec in TABLE.rule}
    assert intents == set(Intent)
    assert {spec.route for spec in TABLE.rule if spec.route} == {Route.REACT}


def test_the_default_rules_are_the_shipped_table() -> None:
    rules = IntentRules.default()
    assert [m.name for m in rules.action] == [s.name for s in TABLE.in_group("action")]
    assert [m.name for m in rules.data] == [s.name for s in TABLE.in_group("data")]
    assert rules.max_scan_chars == TABLE.max_scan_chars
    assert rules.context_domains == TABLE.context_domains


def test_a_rules_priority_orders_it_within_its_group() -> None:
    text = "show me the logs and metrics for auth-gateway"
    assert IntentClassifier().classify(text).rule == "data:logs:logs"
    table = parse_table(_with_rule({"priority": 1}, name="metrics"))
    assert [spec.name for spec in table.in_group("data")][:2] == ["metrics", "logs"]
    decided = IntentClassifier(IntentRules.from_table(table)).classify(text)
    assert decided.rule == "data:metrics:metrics"
    assert decided.intent is Intent.EXTERNAL_DATA


def _shipped() -> dict[str, Any]:
    text = files("weir_router.rules").joinpath("intent_rules.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _with_rule(change: dict[str, Any], name: str = "restart") -> dict[str, Any]:
    data = _shipped()
    data["rule"] = [({**raw, **change} if raw["name"] == name else raw) for raw in data["rule"]]
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"en": ["restart(?:s"]}, "does not compile"),
        ({"group": "actions"}, "group"),
        ({"examples": []}, "examples"),
        ({"zh": [], "en": [], "regex": []}, "no terms"),
        ({"intent": "chat"}, "decides external_action"),
        ({"weight": 3}, "weight"),
    ],
)
def test_a_bad_rule_fails_the_load_naming_the_rule(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RuleTableError, match="intent rule 'restart'") as raised:
        parse_table(_with_rule(change))
    assert message in str(raised.value)


def test_a_guard_rule_without_its_intent_fails_naming_it() -> None:
    data = _with_rule({"intent": None}, name="concept")
    data["rule"] = [{k: v for k, v in raw.items() if v is not None} for raw in data["rule"]]
    with pytest.raises(RuleTableError, match=r"(?s)intent rule 'concept'.*needs the `intent`"):
        parse_table(data)


def test_the_whole_table_is_checked() -> None:
    data = _shipped()
    data["rule"].append({**data["rule"][0]})
    with pytest.raises(RuleTableError, match="unique: restart"):
        parse_table(data)
    data = _shipped()
    data["context_domains"] = ["window", "tides"]
    with pytest.raises(RuleTableError, match="tides"):
        parse_table(data)
    data = _shipped()
    data["rule"] = [raw for raw in data["rule"] if raw["group"] != "question"]
    with pytest.raises(RuleTableError, match="'question' has 0 rules"):
        parse_table(data)
    with pytest.raises(RuleTableError, match="not TOML"):
        load_table("rule = [")
