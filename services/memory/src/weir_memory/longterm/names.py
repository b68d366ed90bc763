"""Is what follows "我叫" / "call me" a name? "叫" and "call" also order, wake and phone.

"我叫了外卖" (I ordered takeout), "叫我起床" (wake me up), "call me later" and "I'm called
back" name nobody, and a wrong name would replace the real one.
"""

from __future__ import annotations

# Aspect particles and negations ("叫了", "叫过", "叫不出"), people ("叫他", "叫人"), what one
# orders or is woken for ("叫外卖", "叫车", "叫我起床"). 车 and 来 are also rare surnames:
# losing those names is the lesser harm.
_NOT_CHINESE_NAME = (
    "了", "过", "着", "不", "没", "别", "他", "她", "你", "它", "您", "人", "大家", "我们",
    "外卖", "车", "出租", "的士", "快递", "救护", "滴滴", "服务员", "警察", "醒", "起床",
    "吃饭", "一声", "来", "去", "回",
)  # fmt: skip
_NOT_ENGLISH_NAME = frozenset({
    "back", "later", "tomorrow", "tonight", "today", "now", "soon", "again", "anytime", "asap",
    "maybe", "crazy", "when", "if", "at", "on", "in", "not", "the", "a", "an", "out", "up",
    "over", "home", "sometime", "whenever", "please", "by", "after", "before", "first", "once",
    "anything", "something", "what",
})  # fmt: skip


def plausible_name(value: str) -> bool:
    """False when the words after "我叫" / "call me" are not a name."""
    first = value.split(maxsplit=1)[0].lower() if value.strip() else ""
    return not value.startswith(_NOT_CHINESE_NAME) and first not in _NOT_ENGLISH_NAME
