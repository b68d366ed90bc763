"""Parameter helpers: colloquial requests to structured tool arguments (seed 002)."""

from __future__ import annotations

import pytest

from weir_router.arguments import fill_arguments
from weir_router.params import (
    find_cache_key,
    find_service_hint,
    find_trace_id,
    find_user_id,
    infer_metric_name,
    infer_query_window,
    infer_timezone,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "service"),
    [
        ("查下 user-service 最近 15 分钟的错误日志", "user-service"),
        ("登录一直转圈", "auth-gateway"),
        ("payment is failing", "payment-service"),
        ("what is the weather", None),
    ],
)
def test_service_hint(text: str, service: str | None) -> None:
    assert find_service_hint(text) == service


def test_ids_keys_windows_metrics_timezones() -> None:
    assert find_trace_id("trace-id: 4bf92f3577b34da6a3ce929d0e0e4736 slow") == (
        "4bf92f3577b34da6a3ce929d0e0e4736"
    )
    assert find_user_id("uid: 42 cannot pay") == "42"
    assert find_cache_key("清理 redis 里 user:1001:profile 的缓存") == "user:1001:profile"
    assert infer_query_window("最近15分钟的错误") == "15m"
    assert infer_query_window("errors in the last 2 hours") == "2h"
    assert infer_query_window("今天的发布") == "today"
    assert infer_metric_name("延迟高") == "p95_ms"
    assert infer_metric_name("错误率上升") == "error_rate"
    assert infer_timezone("what time is it in Tokyo?") == "Asia/Tokyo"
    assert infer_timezone("北京现在几点") == "Asia/Shanghai"
    assert infer_timezone("hello") is None


def test_arguments_follow_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
    }
    assert fill_arguments(schema, "time in Tokyo please") == {"timezone": "Asia/Tokyo"}
    assert fill_arguments(schema, "what time is it") == {"timezone": "UTC"}
    numbers = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    assert fill_arguments(numbers, "add 2 and 40") == {"a": 2.0, "b": 40.0}
    assert fill_arguments(numbers, "add two numbers") is None
    trace = {"properties": {"trace_id": {"type": "string"}}, "required": ["trace_id"]}
    assert fill_arguments(trace, "why is it slow") is None
