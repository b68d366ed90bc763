"""The capability notes of an answer in the user's language.

The harness and the planner write their notes (what is connected, what a route lacked, why a
tool was not called) in English, one fixed sentence per case; the model translates them
itself, but the offline responder cannot, so it looks each sentence up here. A note with no
translation is kept as it is: a note is never dropped.
"""

from __future__ import annotations

import re
from typing import Final

from weir_common.llm.relevance import Language

_ZH: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple(
    (re.compile(pattern), template)
    for pattern, template in (
        (r"^Knowledge base: connected\.$", "知识库：已连接。"),
        (r"^Knowledge base: not connected\.$", "知识库：未连接。"),
        (
            r"^Knowledge base: turned off by the user for this message\.$",
            "知识库：本条消息已被用户关闭。",
        ),
        (r"^Tools: none connected\.$", "工具：未连接任何工具。"),
        (r"^Tools: turned off by the user for this message\.$", "工具：本条消息已被用户关闭。"),
        (r"^Tools: (?P<x>.+)\.$", "工具：{x}。"),
        (r"^Tool servers unavailable: (?P<x>.+)\.$", "不可用的工具服务器：{x}。"),
        (
            r"^No documents were searched: the user turned the knowledge base off\.$",
            "没有检索文档：用户关闭了知识库。",
        ),
        (
            r"^The knowledge base is not connected: no documents were searched for this answer\.$",
            "知识库未连接：本次回答没有检索任何文档。",
        ),
        (
            r"^No tools were called: the user turned tools off for this message\.$",
            "没有调用工具：用户关闭了本条消息的工具。",
        ),
        (
            r"^No tools are connected: no live data can be fetched and no action can be taken\.$",
            "没有连接任何工具：无法获取实时数据，也无法执行操作。",
        ),
        (r"^The tool loop stopped early: (?P<x>.+)\.$", "工具调用提前结束：{x}。"),
        (r"^The tool (?P<tool>\S+) failed: (?P<x>.+)$", "工具 {tool} 调用失败：{x}"),
        (
            r"^(?P<tool>\S+) was not called: its required arguments? (?P<arg>.+) "
            r"could not be filled from the message\.$",
            "没有调用 {tool}：无法从消息中确定它的必填参数 {arg}。",
        ),
        (
            r"^No connected tool fits this request\.$",
            "没有适合这个请求的已连接工具。",
        ),
    )
)
_BUDGETS: Final = (
    (re.compile(r"^the tool-call budget \((\d+)\) is used up$"), "工具调用次数上限（{0}）已用完"),
    (re.compile(r"^the model-turn budget \((\d+)\) is used up$"), "模型调用次数上限（{0}）已用完"),
    (re.compile(r"^the time budget \(([\d.]+) s\) is used up$"), "时间上限（{0} 秒）已用完"),
)


def localize_note(note: str, language: Language) -> str:
    """`note` in `language` when a translation is known, else unchanged."""
    if language != "zh":
        return note
    for pattern, template in _ZH:
        found = pattern.match(note)
        if found is not None:
            fields = {k: _budget(v) for k, v in found.groupdict().items()}
            return template.format(**fields)
    return note


def _budget(text: str) -> str:
    for pattern, template in _BUDGETS:
        found = pattern.match(text)
        if found is not None:
            return template.format(*found.groups())
    return text
