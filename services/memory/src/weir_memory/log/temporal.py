"""The time a question points at ("last week", "yesterday", "in May 2023", "上个月"), as a
window of dates to look for turns in. Relative expressions count from the conversation's
`now`; None when the question names no time."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

Window = tuple[datetime, datetime]  # [start, end)

_MONTHS = [datetime(2000, m, 1).strftime("%B").lower() for m in range(1, 13)]
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "several": 3, "few": 3, "couple": 2, "一": 1, "两": 2, "二": 2, "三": 3, "四": 4,
           "五": 5, "六": 6}  # fmt: skip
_AGO = re.compile(
    r"\b(\d+|an?|one|two|three|four|five|six|several|few|couple of)\s+(day|week|month|year)s?"
    r"\s+ago\b|(\d+|[一两二三四五六])\s*(天|周|个?星期|个月|年)前",
    re.I,
)
# a month named as a time: "in May", "May 2023" (not "may I ask")
_MONTH_NAME = re.compile(
    r"\b(?:(?:in|during|since|of|early|late|mid|last|this)\s+("
    + "|".join(_MONTHS)
    + r")(?:,?\s+(\d{4}))?|("
    + "|".join(_MONTHS)
    + r"),?\s+(\d{4}))\b",
    re.I,
)
_ZH_MONTH = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(?!前)")
_FIXED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bday before yesterday\b|前天", re.I), "day_before"),
    (re.compile(r"\byesterday\b|昨天|昨晚", re.I), "yesterday"),
    (re.compile(r"\b(?:today|tonight|this morning)\b|今天|今晚", re.I), "today"),
    (re.compile(r"\blast night\b", re.I), "yesterday"),
    (re.compile(r"\blast weekend\b|上个?周末", re.I), "last_weekend"),
    (re.compile(r"\b(?:last|past|previous) week\b|上(?:个)?(?:周|星期|礼拜)", re.I), "last_week"),
    (re.compile(r"\bthis week\b|这(?:个)?(?:周|星期)|本周", re.I), "this_week"),
    (re.compile(r"\b(?:last|past|previous) month\b|上(?:个)?月", re.I), "last_month"),
    (re.compile(r"\bthis month\b|这个月|本月", re.I), "this_month"),
    (re.compile(r"\b(?:last|past|previous) year\b|去年", re.I), "last_year"),
    (re.compile(r"\bthis year\b|今年", re.I), "this_year"),
)


def _day(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def _month(year: int, month: int, at: datetime) -> Window:
    start = at.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + month // 12, month=month % 12 + 1)
    return start, end


def _fixed(name: str, now: datetime) -> Window:
    today = _day(now)
    monday = today - timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    windows = {
        "today": (today, today + timedelta(days=1)),
        "yesterday": (today - timedelta(days=1), today),
        "day_before": (today - timedelta(days=2), today - timedelta(days=1)),
        "last_weekend": (monday - timedelta(days=2), monday),
        "last_week": (monday - timedelta(days=7), monday),
        "this_week": (monday, today + timedelta(days=1)),
        "this_month": (month_start, today + timedelta(days=1)),
        "this_year": (today.replace(month=1, day=1), today + timedelta(days=1)),
    }
    if name == "last_month":
        last = month_start - timedelta(days=1)
        return _month(last.year, last.month, now)
    if name == "last_year":
        return today.replace(year=now.year - 1, month=1, day=1), today.replace(month=1, day=1)
    return windows[name]


def _ago(match: re.Match[str], now: datetime) -> Window:
    amount, unit = (match.group(1), match.group(2)) if match.group(1) else match.groups()[2:]
    n = int(amount) if amount.isdigit() else _NUMBER.get(amount.lower().split()[0], 1)
    days = {"day": 1, "天": 1, "week": 7, "周": 7, "month": 30, "个月": 30, "year": 365,
            "年": 365}.get(unit.lower(), 7)  # fmt: skip
    if "星期" in unit:
        days = 7
    center = _day(now) - timedelta(days=n * days)
    slack = timedelta(days=max(1, days // 2) if days > 1 else 1)
    return center - slack, center + slack + timedelta(days=1)


def window(question: str, now: datetime) -> Window | None:
    """The dates `question` points at, or None."""
    if match := _AGO.search(question):
        return _ago(match, now)
    for pattern, name in _FIXED:
        if pattern.search(question):
            return _fixed(name, now)
    if match := _MONTH_NAME.search(question):
        name, named_year = (
            (match.group(1), match.group(2)) if match.group(1) else match.groups()[2:]
        )
        month = _MONTHS.index(name.lower()) + 1
        year = int(named_year) if named_year else now.year - (month > now.month)
        return _month(year, month, now)
    if match := _ZH_MONTH.search(question):
        month = int(match.group(2))
        if 1 <= month <= 12:
            year = int(match.group(1)) if match.group(1) else now.year - (month > now.month)
            return _month(year, month, now)
    return None
