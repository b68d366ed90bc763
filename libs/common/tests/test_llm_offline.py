"""The honest offline responder: plain disclosure, evidence only, never invented facts."""

from __future__ import annotations

import pytest

from weir_common.llm import EvidencePassage, OfflineRequest, offline_answer, stream_text
from weir_common.llm.relevance import detect_language, rank, terms

pytestmark = pytest.mark.unit

HANDBOOK = EvidencePassage(
    source="handbook.pdf",
    locator="p. 4",
    text="New employees receive 20 vacation days per year. Requests need a manager's approval.",
)
MENU = EvidencePassage(source="menu.txt", text="Lunch is served at noon in the cafeteria.")


def test_discloses_offline_mode_first_in_english() -> None:
    answer = offline_answer(OfflineRequest(question="How many vacation days do I get?"))
    assert answer.startswith("No language model is configured")
    assert "offline" in answer.split("\n")[0]


def test_discloses_offline_mode_in_chinese_for_chinese_question() -> None:
    answer = offline_answer(OfflineRequest(question="年假有多少天？"))
    assert answer.startswith("当前没有配置语言模型")


def test_quotes_relevant_evidence_with_citation_and_skips_irrelevant() -> None:
    answer = offline_answer(
        OfflineRequest(
            question="How many vacation days do new employees get?", evidence=[MENU, HANDBOOK]
        )
    )
    assert "New employees receive 20 vacation days per year." in answer
    assert "[handbook.pdf, p. 4]" in answer
    assert "Lunch" not in answer
    assert "no evidence" not in answer


def test_chinese_evidence_by_bigrams() -> None:
    passages = [
        EvidencePassage(source="x.txt", text="今天股市大跌"),
        EvidencePassage(
            source="手册.pdf", locator="第3页", text="新员工每年享有十天年假，需经理批准。"
        ),
    ]
    answer = offline_answer(OfflineRequest(question="公司的年假政策是什么？", evidence=passages))
    assert "新员工每年享有十天年假" in answer
    assert "[手册.pdf, 第3页]" in answer
    assert "股市" not in answer


def test_memory_facts_and_earlier_turns() -> None:
    req = OfflineRequest(
        question="Which city should I visit for my trip to Japan?",
        history=[
            ("I am planning a trip to Japan in April.", "Sounds great."),
            ("I like ramen.", "Noted."),
        ],
        memory_facts=["User is vegetarian", "User wants to visit Kyoto in Japan"],
    )
    answer = offline_answer(req)
    assert "User wants to visit Kyoto in Japan" in answer
    assert (
        'Earlier in this conversation you said: "I am planning a trip to Japan in April."' in answer
    )
    assert "vegetarian" not in answer
    assert "ramen" not in answer


def test_an_earlier_asking_of_the_same_question_does_not_hide_the_memory() -> None:
    question = "do you remember anything about my pet Tofu?"
    req = OfflineRequest(
        question=question,
        memory_facts=[
            f"2026-12-05: {question} → No language model is configured…",
            "[preference] hello there, my cat Tofu just turned three (2026-12-05)",
            f"#12 (2026-12-05, 1 chats) {question.upper()}",
        ],
    )
    answer = offline_answer(req)
    assert "my cat Tofu just turned three" in answer
    assert answer.count(question) == 1  # only where the reply repeats the question


def test_meta_question_recalls_recent_turns() -> None:
    req = OfflineRequest(
        question="What did I tell you earlier?", history=[("My dog is called Rex.", "Nice name!")]
    )
    assert "My dog is called Rex." in offline_answer(req)


def test_nothing_relevant_says_no_evidence_and_states_capabilities() -> None:
    req = OfflineRequest(
        question="What is the capital of Mars?",
        evidence=[MENU],
        capability_notes=["The knowledge base is not connected."],
    )
    answer = offline_answer(req)
    assert "I have no evidence to answer this question" in answer
    assert "The knowledge base is not connected." in answer
    assert "Lunch" not in answer


def test_chinese_no_evidence() -> None:
    answer = offline_answer(OfflineRequest(question="火星的首都是哪里？"))
    assert "我没有可以回答这个问题的依据" in answer


def test_greeting_is_polite_and_not_a_refusal() -> None:
    for question, expected in [("Hello!", "Hello!"), ("你好", "你好！")]:
        answer = offline_answer(OfflineRequest(question=question))
        assert expected in answer
        assert "no evidence" not in answer
        assert "没有可以回答" not in answer


def test_deterministic_and_language_override() -> None:
    req = OfflineRequest(question="vacation days?", evidence=[HANDBOOK], language="zh")
    assert offline_answer(req) == offline_answer(req)
    assert offline_answer(req).startswith("当前没有配置语言模型")


def test_long_passage_is_excerpted_around_the_match() -> None:
    filler = "Unrelated sentence about the weather. " * 30
    passage = EvidencePassage(
        source="long.txt", text=filler + "The parking fee is 5 euros. " + filler
    )
    answer = offline_answer(OfflineRequest(question="What is the parking fee?", evidence=[passage]))
    assert "The parking fee is 5 euros." in answer
    assert len(answer) < 800


def test_stream_text_roundtrip() -> None:
    text = offline_answer(OfflineRequest(question="年假有多少天？"))
    pieces = list(stream_text(text, 7))
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 7 for p in pieces)
    with pytest.raises(ValueError, match="chunk_chars"):
        list(stream_text("x", 0))


def test_relevance_helpers() -> None:
    assert detect_language("用Python怎么读文件") == "zh"
    assert detect_language("How do I read a file in Python?") == "en"
    assert terms("The vacation days") == terms("vacations day")
    assert terms("She moved to Lisbon") == terms("moving to lisbon")
    assert "the" not in terms("The vacation days")
    assert rank("basketball", ["I love basketball", "stocks fell"], 5) == [0]
    assert rank("the of and", ["the of and"], 5) == []
