"""Parameter helpers (seed 002): structured tool arguments from colloquial requests.

"登录一直转圈" → service `auth-gateway`; "最近15分钟" → `15m`; "延迟高" → `p95_ms`;
"what time is it in Tokyo" → `Asia/Tokyo`. Each helper returns None when the text says nothing.
"""

from __future__ import annotations

import re

_SERVICE_EXPLICIT = re.compile(
    r"\b([a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:service|gateway|api|worker|svc))\b"
)
_SERVICE_HINTS = {
    "登录": "auth-gateway", "login": "auth-gateway", "sign in": "auth-gateway",
    "支付": "payment-service", "payment": "payment-service",
    "订单": "order-service", "order": "order-service",
    "用户": "user-service", "user profile": "user-service",
    "搜索": "search-service", "库存": "inventory-service", "inventory": "inventory-service",
}  # fmt: skip
_TRACE = re.compile(r"trace[-_ ]?id\s*[:=：]?\s*([0-9a-zA-Z-]{8,64})|\b([0-9a-f]{32})\b", re.I)
_USER = re.compile(r"(?:uid|user[-_ ]?id|用户\s*id|用户)\s*[:=：]?\s*([A-Za-z0-9_-]{2,64})", re.I)
_CACHE_KEY = re.compile(
    r"(?:key|缓存键|缓存)\s*[:=：]?\s*([A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)+)|\b([a-z]+:[0-9A-Za-z_:-]+)\b",
    re.I,
)
_WINDOW = re.compile(
    r"(?:最近|过去|last|past)\s*(\d+)\s*(分钟|min(?:ute)?s?|小时|hours?|h|天|days?|d|秒|seconds?|s)",
    re.I,
)
_UNITS = {"分": "m", "m": "m", "小": "h", "h": "h", "天": "d", "d": "d", "秒": "s", "s": "s"}
_METRICS = (
    (("延迟", "latency", "slow", "慢", "响应时间"), "p95_ms"),
    (("错误率", "error rate", "失败率", "5xx"), "error_rate"),
    (("qps", "流量", "throughput", "请求量"), "qps"),
    (("cpu",), "cpu_usage"),
    (("内存", "memory", "oom"), "memory_usage"),
    (("命中率", "hit rate"), "cache_hit_rate"),
)
_CITIES = {
    "tokyo": "Asia/Tokyo", "东京": "Asia/Tokyo",
    "beijing": "Asia/Shanghai", "北京": "Asia/Shanghai",
    "shanghai": "Asia/Shanghai", "上海": "Asia/Shanghai", "shenzhen": "Asia/Shanghai",
    "深圳": "Asia/Shanghai", "hong kong": "Asia/Hong_Kong", "香港": "Asia/Hong_Kong",
    "singapore": "Asia/Singapore", "新加坡": "Asia/Singapore", "seoul": "Asia/Seoul",
    "首尔": "Asia/Seoul", "london": "Europe/London", "伦敦": "Europe/London",
    "paris": "Europe/Paris", "巴黎": "Europe/Paris", "berlin": "Europe/Berlin",
    "柏林": "Europe/Berlin", "new york": "America/New_York", "纽约": "America/New_York",
    "san francisco": "America/Los_Angeles", "los angeles": "America/Los_Angeles",
    "旧金山": "America/Los_Angeles", "洛杉矶": "America/Los_Angeles", "sydney": "Australia/Sydney",
    "悉尼": "Australia/Sydney", "utc": "UTC", "moscow": "Europe/Moscow", "莫斯科": "Europe/Moscow",
}  # fmt: skip


def find_service_hint(text: str) -> str | None:
    """A service name written out ("user-service"), or one implied by a keyword ("登录")."""
    lowered = text.lower()
    explicit = _SERVICE_EXPLICIT.search(lowered)
    if explicit:
        return explicit.group(1)
    return next((svc for word, svc in _SERVICE_HINTS.items() if word in lowered), None)


def find_trace_id(text: str) -> str | None:
    """`trace-id: abc123…` or a bare 32-hex id."""
    found = _TRACE.search(text)
    return (found.group(1) or found.group(2)) if found else None


def find_user_id(text: str) -> str | None:
    """`uid: 42`, `user_id=abc`, `用户 1001`."""
    found = _USER.search(text)
    return found.group(1) if found else None


def find_cache_key(text: str) -> str | None:
    """A Redis-style key such as `user:1001:profile`."""
    found = _CACHE_KEY.search(text)
    return (found.group(1) or found.group(2)) if found else None


def infer_query_window(text: str) -> str | None:
    """ "最近15分钟" / "last 2 hours" → `15m` / `2h`; "今天" / "today" → `today`."""
    found = _WINDOW.search(text)
    if found:
        return f"{found.group(1)}{_UNITS.get(found.group(2)[0].lower(), 'm')}"
    lowered = text.lower()
    return "today" if "今天" in lowered or "today" in lowered else None


def infer_metric_name(text: str) -> str | None:
    """ "延迟高" → `p95_ms`, "错误率" → `error_rate`, …"""
    lowered = text.lower()
    return next((name for words, name in _METRICS if any(w in lowered for w in words)), None)


def infer_city(text: str) -> str | None:
    """The first known city named in the text, as written in the table."""
    lowered = text.lower()
    return next((city for city in _CITIES if city in lowered), None)


def infer_timezone(text: str) -> str | None:
    """The IANA timezone of a city named in the text ("Tokyo" → `Asia/Tokyo`)."""
    city = infer_city(text)
    return _CITIES[city] if city else None
