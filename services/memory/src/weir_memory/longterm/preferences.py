"""Preferences (F33): rules that apply at once, canonical keys, and the preference block.

Rules follow seed 000 ("我叫" → 姓名, "我喜欢" / "我爱" → 喜好) plus their English
equivalents. Questions never set a preference: "我喜欢什么运动？" asks, it does not tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .names import plausible_name
from .text import is_chinese, is_question, sentences

_END = r"(?=[，,。.!！；;、]|$| and I\b| but\b)"
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"我的名字(?:是|叫)([^\s，,。.!！?？、和]{1,12})"), "name"),
    (re.compile(r"我叫(?:做)?([^\s，,。.!！?？、和]{1,12})"), "name"),
    (re.compile(r"(?<!别)(?<!不)(?<!不要)叫我([^\s，,。.!！?？、和]{1,12})"), "name"),
    (re.compile(r"我(?:不喜欢|讨厌)(.{1,24}?)" + _END), "dislikes"),
    (re.compile(r"我(?:很|非常|最|特别|也|还)?(?:喜欢|爱)(.{1,24}?)" + _END), "likes"),
    (re.compile(r"我住在(.{1,24}?)" + _END), "location"),
    (re.compile(r"\b(?i:my name is) ([A-Za-z][\w'-]*(?: [A-Z][\w'-]*)?)"), "name"),
    (re.compile(r"(?<!n't )(?<!not )(?<!never )\b(?i:call me|i'm called|i am called)"
                r" ([A-Z][\w'-]*)"), "name"),
    (re.compile(r"\bI (?:really |also )?(?:hate|dislike|don't like|do not like) (.+?)" + _END,
                re.I), "dislikes"),
    (re.compile(r"\bI (?:really |also |just )?(?:like|love|enjoy|adore) (.+?)" + _END, re.I),
     "likes"),
    (re.compile(r"\bI live in ([A-Z][\w' -]{1,40}?)" + _END), "location"),
)  # fmt: skip
_TRAILING = re.compile(r"[\s的啊呀哦呢了吧。.!！]+$")
_NOT_A_VALUE = frozenset(
    {"you", "it", "that", "this", "them", "him", "her", "你", "它", "他", "她"}
)

#: Keys that keep several values (a list), the others keep the latest one.
MULTI_VALUED = frozenset({"likes", "dislikes"})
LABELS: dict[str, tuple[str, str]] = {
    "name": ("姓名", "Name"),
    "likes": ("喜好", "Likes"),
    "dislikes": ("不喜欢", "Dislikes"),
    "location": ("所在地", "Location"),
    "occupation": ("职业", "Occupation"),
    "age": ("年龄", "Age"),
}
_ALIASES = {
    "名字": "name", "姓名": "name", "称呼": "name",
    "喜好": "likes", "爱好": "likes", "兴趣": "likes", "喜欢": "likes", "like": "likes",
    "hobby": "likes", "hobbies": "likes", "不喜欢": "dislikes", "讨厌": "dislikes",
    "dislike": "dislikes", "所在地": "location", "住址": "location", "city": "location",
    "职业": "occupation", "job": "occupation", "工作": "occupation", "年龄": "age",
}  # fmt: skip
ORDER = ("name", "age", "location", "occupation", "likes", "dislikes")


@dataclass(frozen=True)
class Preference:
    """One key/value the user told about themselves."""

    key: str
    value: str


def canonical_key(key: str) -> str:
    """`姓名` / `Name` / `name` → `name`; unknown keys are kept (lower-cased)."""
    k = key.strip().lower()
    return _ALIASES.get(k, _ALIASES.get(key.strip(), k))


def extract(text: str) -> list[Preference]:
    """The preferences stated in `text`, by rule (statements only, never questions)."""
    found: list[Preference] = []
    for sentence in sentences(text):
        if is_question(sentence):
            continue
        for pattern, key in _RULES:
            for match in pattern.finditer(sentence):
                value = _TRAILING.sub("", match.group(1).strip())
                if not value or value.lower() in _NOT_A_VALUE:
                    continue
                if key == "name" and not plausible_name(value):
                    continue
                if Preference(key, value) not in found:
                    found.append(Preference(key, value))
    return _first_name_only(found)


def _first_name_only(prefs: list[Preference]) -> list[Preference]:
    names = [p for p in prefs if p.key == "name"]
    return [p for p in prefs if p.key != "name" or p is names[0]]


def label(key: str, chinese: bool) -> str:
    """The key's label in the user's language."""
    zh, en = LABELS.get(key, (key, key.replace("_", " ").capitalize()))
    return zh if chinese else en


def lines(profile: dict[str, list[str]], chinese: bool) -> list[str]:
    """`姓名: 小明` lines, known keys first."""
    keys = sorted(profile, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))
    sep = "、" if chinese else ", "
    return [f"{label(k, chinese)}: {sep.join(profile[k])}" for k in keys if profile[k]]


def block(profile: dict[str, list[str]], query: str) -> str | None:
    """Seed 000's preference block ("【用户偏好】\\n姓名: 小明\\n喜好: 篮球"), in the language
    of the query; None when there is nothing to say."""
    return render_block(profile, is_chinese(query))


def render_block(profile: dict[str, list[str]], chinese: bool) -> str | None:
    """The preference block in Chinese or English."""
    body = lines(profile, chinese)
    if not body:
        return None
    return "\n".join(["【用户偏好】" if chinese else "[User preferences]", *body])
