"""Offline evaluator rules (F39): each rule fails on a bad answer and passes a good one."""

from __future__ import annotations

import pytest

from weir_harness.evaluator_rules import (
    avoided_terms,
    contradicts_preferences,
    first_failure,
    missing_citation,
    off_language,
)
from weir_harness.settings import HarnessSettings

pytestmark = pytest.mark.unit


def test_avoided_terms_english_and_chinese() -> None:
    terms = avoided_terms(
        [
            "Dislikes coffee, loves tea",
            "allergic to peanuts",
            "喜好: 打篮球",
            "不喜欢咖啡",
            "对花生过敏",
        ]
    )
    assert {"coffee", "peanuts", "咖啡", "花生"} <= terms
    assert "tea" not in terms
    assert "打篮球" not in terms


def test_recommending_a_disliked_thing_is_a_contradiction() -> None:
    reason = contradicts_preferences("Try a strong coffee to wake up.", ["dislikes coffee"])
    assert reason is not None
    assert "coffee" in reason
    assert (
        contradicts_preferences("推荐你喝一杯咖啡提神。", ["【用户偏好】\n不喜欢咖啡"]) is not None
    )


def test_steering_away_is_not_a_contradiction() -> None:
    assert contradicts_preferences("Try green tea instead of coffee.", ["dislikes coffee"]) is None
    assert contradicts_preferences("可以喝绿茶，不喝咖啡也能提神。", ["不喜欢咖啡"]) is None
    assert contradicts_preferences("Try green tea.", ["dislikes coffee"]) is None


def test_talking_about_a_disliked_thing_is_not_a_contradiction() -> None:
    lines = ["dislikes coffee"]
    assert contradicts_preferences("Coffee was first roasted in Yemen.", lines) is None
    assert contradicts_preferences("咖啡最早在也门烘焙。", ["不喜欢咖啡"]) is None
    assert contradicts_preferences("You should have a coffee.", lines) is not None


def test_off_language() -> None:
    assert off_language("Drink some tea.", "我早上应该喝什么？") is not None
    assert off_language("喝点茶吧。", "我早上应该喝什么？") is None
    assert off_language("喝点茶吧，很好。", "What should I drink?") is not None
    assert off_language("Tea, e.g. 龙井.", "What should I drink?") is None


def test_missing_citation() -> None:
    question = "What is the upload size limit?"
    evidence = [("handbook.pdf", "Uploads are limited to 5 GB per file.")]
    assert missing_citation("The limit is 5 GB.", question, evidence) is not None
    assert missing_citation("The limit is 5 GB [1].", question, evidence) is None
    assert missing_citation("Per handbook.pdf the limit is 5 GB.", question, evidence) is None
    assert missing_citation("The limit is 5 GB.", question, []) is None


def test_an_answer_that_does_not_use_the_evidence_need_not_cite_it() -> None:
    evidence = [("handbook-zorblax.txt", "Zorblax reactors are vented every 40 hours.")]
    assert missing_citation("Otters hold hands while they sleep.", "Otters?", evidence) is None
    # repeating the question's words is not drawing on the passage
    assert (
        missing_citation("Zorblax reactors, I do not know.", "Zorblax reactors?", evidence) is None
    )


def test_first_failure_order_and_pass() -> None:
    assert first_failure("  ", "hi") == "the answer is empty"
    assert first_failure("Hello! How can I help?", "hi", ["dislikes coffee"]) is None
    assert first_failure(
        "Have a coffee [1].", "what to drink?", ["dislikes coffee"], [("a.md", "coffee")]
    )


def test_evaluator_settings_switch_per_route() -> None:
    settings = HarnessSettings(evaluator_skip_routes=["react"])
    assert settings.evaluator_max_regenerations == 3
    assert settings.evaluates("plain_chat")
    assert not settings.evaluates("react")
    assert not HarnessSettings(evaluator_enabled=False).evaluates("plain_chat")


def test_avoided_terms_from_memorys_preference_block() -> None:
    terms = avoided_terms(
        ["【用户偏好】", "不喜欢: 咖啡、香菜", "Dislikes: coffee, spicy food", "喜欢: 茶"]
    )
    assert {"咖啡", "香菜", "coffee", "spicy food"} <= terms
    assert "茶" not in terms
    assert contradicts_preferences("来一杯咖啡吧。", ["不喜欢: 咖啡"]) is not None
