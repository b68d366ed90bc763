"""Preference rules (seed 000: 我叫 → 姓名, 我喜欢 / 我爱 → 喜好, and English) and the block."""

from __future__ import annotations

import pytest

from weir_memory.longterm.preferences import (
    Preference,
    block,
    canonical_key,
    extract,
    render_block,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("你好，我叫小明，我喜欢打篮球", [("name", "小明"), ("likes", "打篮球")]),
        ("我爱喝茶。我不喜欢吃香菜", [("likes", "喝茶"), ("dislikes", "吃香菜")]),
        ("我的名字是李雷", [("name", "李雷")]),
        ("我住在北京", [("location", "北京")]),
        ("My name is Alice and I love playing basketball.",
         [("name", "Alice"), ("likes", "playing basketball")]),
        ("Please call me Bob. I really like green tea, but I hate coffee.",
         [("name", "Bob"), ("dislikes", "coffee"), ("likes", "green tea")]),
        ("my name is Mary Jane", [("name", "Mary Jane")]),
    ],
)  # fmt: skip
def test_rules_extract_statements(text: str, expected: list[tuple[str, str]]) -> None:
    assert extract(text) == [Preference(k, v) for k, v in expected]


@pytest.mark.parametrize(
    "question",
    ["我叫什么？我喜欢什么运动？", "我叫什么名字", "你还记得我喜欢什么吗", "What do I like?",
     "Do I love jazz?", "I love you", "I'm not sure whether I like jazz"],
)  # fmt: skip
def test_questions_and_pronouns_set_nothing(question: str) -> None:
    assert extract(question) == []


@pytest.mark.parametrize(
    "text",
    ["我叫了外卖", "我叫外卖，好饿", "我叫过他好几次", "叫我起床", "别叫我小明", "我叫他小王",
     "Call me later.", "call me back when you land", "Don't call me Bob",
     "I'm called back for a second interview", "My name is not important"],
)  # fmt: skip
def test_calling_ordering_and_waking_name_nobody(text: str) -> None:
    assert [p for p in extract(text) if p.key == "name"] == []


@pytest.mark.parametrize(
    ("text", "name"),
    [("我叫做王芳", "王芳"), ("大家都叫我阿强", "阿强"), ("I'm called Alice.", "Alice"),
     ("You can call me Bob", "Bob")],
)  # fmt: skip
def test_names_are_still_found(text: str, name: str) -> None:
    assert extract(text) == [Preference("name", name)]


def test_labels_map_to_canonical_keys() -> None:
    assert [canonical_key(k) for k in ("姓名", "Name", "喜好", "hobbies", "职业", "mood")] == [
        "name", "name", "likes", "likes", "occupation", "mood",
    ]  # fmt: skip


def test_block_speaks_the_users_language() -> None:
    profile = {"likes": ["打篮球", "游泳"], "name": ["小明"]}
    assert block(profile, "我叫什么？") == "【用户偏好】\n姓名: 小明\n喜好: 打篮球、游泳"
    assert block(profile, "What is my name?") == (
        "[User preferences]\nName: 小明\nLikes: 打篮球, 游泳"
    )
    assert render_block({}, chinese=True) is None
