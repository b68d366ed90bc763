"""The one sentence splitter and question detector the analyzer, preferences and topics share."""

from __future__ import annotations

import pytest

from weir_memory.longterm.text import is_question, sentences

pytestmark = pytest.mark.unit


def test_sentences_split_at_sentence_and_clause_marks_only() -> None:
    assert sentences("我叫小明。我喜欢打篮球！你呢？？") == [
        "我叫小明。", "我喜欢打篮球！", "你呢？？",
    ]  # fmt: skip
    assert sentences("I use node.js 3.5 daily; it works. Really") == [
        "I use node.js 3.5 daily;", "it works.", "Really",
    ]  # fmt: skip
    assert sentences(" ？！ ") == []


@pytest.mark.parametrize(
    "text",
    ["我叫什么名字", "你还记得我喜欢什么吗", "我住在哪里", "谁是我的老师", "怎么做红烧肉",
     "我养了多少只猫", "What is my name", "what's my name", "do you remember my dog",
     "Tell me what I like", "好的？", "Is it raining?"],
)  # fmt: skip
def test_questions_with_or_without_a_question_mark(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize(
    "text",
    ["我叫小明", "我什么都吃", "我不怎么喜欢吃辣", "我谁都不认识", "我哪儿都去过",
     "I like what I see", "I know how to swim", "Can't stand cilantro", "I think so"],
)  # fmt: skip
def test_statements_are_not_questions(text: str) -> None:
    assert not is_question(text)
