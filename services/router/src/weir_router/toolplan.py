"""The rule-based tool planner (F22, seed 002): preferred and fallback tools per scenario.

Ops questions follow fixed evidence paths (a trace problem: trace first, then metrics and
logs; a cache problem: the key and hit rate, then deployments) and are answered to a contract:
evidence → root cause → SOP → action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

ANSWER_CONTRACT: Final = (
    "Answer in four parts: 1. Evidence — what the tools returned, cited; 2. Root cause; "
    "3. SOP — the standard steps for this kind of problem; 4. Action — what to do now. "
    "Say plainly when evidence is missing."
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A kind of request, the tools that answer it (in order) and whether it is ops."""

    name: str
    pattern: re.Pattern[str]
    preferred: tuple[str, ...]
    fallback: tuple[str, ...] = ()
    ops: bool = False


def _scenario(
    name: str, words: str, preferred: str, fallback: str = "", ops: bool = False
) -> Scenario:
    return Scenario(
        name, re.compile(words, re.I), tuple(preferred.split()), tuple(fallback.split()), ops
    )


SCENARIOS: Final = (
    _scenario(
        "trace",
        r"trace|链路|调用链",
        "get_trace query_metrics",
        "search_logs",
        ops=True,
    ),
    _scenario(
        "cache",
        r"缓存|cache|命中率|redis",
        "inspect_cache_key query_metrics",
        "get_deploy_history search_logs",
        ops=True,
    ),
    _scenario(
        "latency",
        r"延迟|慢|latency|slow|超时|timeout|p9[59]",
        "query_metrics get_trace",
        "search_logs",
        ops=True,
    ),
    _scenario(
        "errors",
        r"错误|报错|异常|error|exception|5xx|日志|\blogs?\b",
        "search_logs query_metrics",
        "get_trace",
        ops=True,
    ),
    _scenario(
        "deploy",
        r"发布|部署|回滚|deploy|release|rollback",
        "get_deploy_history",
        "search_logs",
        ops=True,
    ),
    _scenario(
        "time",
        r"几点|时间|\btime\b|时区|timezone|\bdate\b|日期",
        "get_current_time time",
        "convert_time",
        ops=False,
    ),
    _scenario(
        "weather",
        r"天气|weather|气温|下雨|temperature",
        "weather get_weather",
        "web_search",
        ops=False,
    ),
    _scenario(
        "search",
        r"搜索|search|新闻|\bnews\b|网上",
        "web_search",
        "",
        ops=False,
    ),
    _scenario(
        "knowledge",
        r"文档|知识库|document|manual|handbook",
        "knowledge_search",
        "web_search",
        ops=False,
    ),
)


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """Which tools to try for a request, best first, and the answer contract if any."""

    scenario: str | None
    preferred: tuple[str, ...]
    fallback: tuple[str, ...]
    answer_contract: str | None

    def ordered(self, available: set[str]) -> list[str]:
        """Preferred then fallback tools that are actually connected."""
        return [t for t in dict.fromkeys((*self.preferred, *self.fallback)) if t in available]


def plan_tools(query: str) -> ToolPlan:
    """The plan of the first scenario the request matches (none: an empty plan)."""
    for scenario in SCENARIOS:
        if scenario.pattern.search(query):
            contract = ANSWER_CONTRACT if scenario.ops else None
            return ToolPlan(scenario.name, scenario.preferred, scenario.fallback, contract)
    return ToolPlan(None, (), (), None)
