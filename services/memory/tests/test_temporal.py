"""The time a question names, as a window of dates (relative to the conversation's now)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from weir_memory.log.temporal import window

pytestmark = pytest.mark.unit
NOW = datetime(2023, 6, 14, 15, 30, tzinfo=UTC)  # a Wednesday


def day(month: int, d: int, year: int = 2023) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did I do yesterday?", (day(6, 13), day(6, 14))),
        ("the day before yesterday", (day(6, 12), day(6, 13))),
        ("what did we talk about last week", (day(6, 5), day(6, 12))),
        ("last weekend I went out", (day(6, 10), day(6, 12))),
        ("anything last month?", (day(5, 1), day(6, 1))),
        ("What happened in May 2023?", (day(5, 1), day(6, 1))),
        ("What did I say in August", (day(8, 1, 2022), day(9, 1, 2022))),  # the last August
        ("last year", (day(1, 1, 2022), day(1, 1))),
        ("three days ago", (day(6, 10), day(6, 13))),
        ("我昨天说了什么", (day(6, 13), day(6, 14))),
        ("上周我们聊了什么", (day(6, 5), day(6, 12))),
        ("上个月", (day(5, 1), day(6, 1))),
        ("3天前", (day(6, 10), day(6, 13))),
        ("去年", (day(1, 1, 2022), day(1, 1))),
        ("2023年5月", (day(5, 1), day(6, 1))),
    ],
)
def test_a_named_time_is_a_window(question: str, expected: tuple[datetime, datetime]) -> None:
    assert window(question, NOW) == expected


@pytest.mark.parametrize(
    "question",
    ["When did Caroline go to the support group?", "may I ask something", "hello", "我叫什么？"],
)
def test_no_named_time_no_window(question: str) -> None:
    assert window(question, NOW) is None


def test_two_weeks_ago_is_around_that_day() -> None:
    start, end = window("two weeks ago", NOW) or (NOW, NOW)
    assert start <= day(5, 31) < end
    assert end - start <= (day(6, 9) - day(5, 25))
