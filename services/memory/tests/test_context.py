"""The memory block a model reads: seeds 000/001 blocks and seed 003's "no hit"."""

from __future__ import annotations

import pytest

from weir_memory.context import render, untold

pytestmark = pytest.mark.unit


def test_a_search_without_a_hit_says_so_in_the_users_language() -> None:
    zh = render(preferences=None, memories=[], searched=True, summary="会话摘要", recall=None,
                chinese=True)  # fmt: skip
    assert zh == "=== 长期记忆 ===\n（记忆无命中）\n\n=== 当前会话摘要 ===\n会话摘要"
    en = render(preferences=None, memories=[], searched=True, summary=None, recall=None,
                chinese=False)  # fmt: skip
    assert en == "=== Long-term memory ===\n(no memory hit)"


def test_without_a_search_there_is_no_long_term_block() -> None:
    assert render(preferences=None, memories=[], searched=False, summary=None, recall=None,
                  chinese=True) is None  # fmt: skip


def test_memories_are_listed_under_their_header() -> None:
    block = render(preferences="【用户偏好】\n姓名: 小明", memories=["[偏好] 我喜欢打篮球"],
                   searched=True, summary=None, recall="=== 回忆结果 (RecallHistory) ===\n#1",
                   chinese=True)  # fmt: skip
    assert block == ("【用户偏好】\n姓名: 小明\n\n=== 长期记忆 ===\n- [偏好] 我喜欢打篮球"
                     "\n\n=== 回忆结果 (RecallHistory) ===\n#1")  # fmt: skip


def test_a_recalled_session_that_only_repeats_a_told_turn_is_not_offered_again() -> None:
    told = ["2026-12-06: btw my sister Mia just moved to Lisbon, anyway, what is a good pasta"
            " recipe? → Here is a simple one."]  # fmt: skip
    same = "#1 (2026-12-06, 1 chats) btw my sister Mia just moved to Lisbon, anyway, what is a"
    recalled = [
        f"{same} good pasta recipe? → Here is a simple one.",
        "  - [2026-12-06] btw my sister Mia just moved to Lisbon, anyway, what is a good pasta…",
        "#2 (2026-12-01, 2 chats) Trip to Japan | btw my sister Mia just moved to Lisbon",
        "  - [2026-12-01] I want to see Kyoto → Take the train.",
        "  - [2026-12-01] Lisbon → a good pasta",  # words of the told turn, as words
        "  - [2026-12-01] Lis → pas",  # not words of it
    ]
    assert untold(recalled, told) == [*recalled[2:4], recalled[5]]
    assert untold(recalled, []) == recalled
