"""Built-in tools: `time` (offline) and the HTTP-backed `weather`, `web_search`, `knowledge_search`.

Each tool says plainly when it cannot answer ("not configured", "unavailable: …"); none
ever makes data up.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx

from weir_common.events import ServerStatus, ToolInfo

from .models import ToolOutcome
from .providers import HttpTool, KnowledgeBase
from .settings import ToolsSettings

BUILTIN = "builtin"


@dataclass(frozen=True)
class CallContext:
    """What a built-in tool may need besides its arguments."""

    timeout_s: float
    user_id: str | None = None


Run = Callable[[dict[str, Any], CallContext], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class Builtin:
    """A built-in tool: how the planner sees it, how to run it, and whether it can answer."""

    info: ToolInfo
    run: Run
    status: Callable[[], ServerStatus] | None = None


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


async def current_time(arguments: dict[str, Any], _: CallContext) -> ToolOutcome:
    """The current time in an IANA timezone (UTC by default), from this machine's clock."""
    name = str(arguments.get("timezone") or "UTC")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        hint = "use an IANA name such as Asia/Tokyo, Europe/Paris or UTC"
        return ToolOutcome(content=f"unknown timezone {name!r}: {hint}", is_error=True)
    now = datetime.now(zone)
    answer = {
        "timezone": name,
        "datetime": now.isoformat(timespec="seconds"),
        "day_of_week": now.strftime("%A"),
        "utc_offset": now.strftime("%z"),
    }
    return ToolOutcome(content=json.dumps(answer, ensure_ascii=False))


TIME = Builtin(
    ToolInfo(
        name="time",
        description="Current date and time in an IANA timezone (e.g. Asia/Tokyo); UTC if none.",
        input_schema=_schema({"timezone": {"type": "string", "description": "IANA name"}}, []),
        server=BUILTIN,
    ),
    current_time,
)


def http_builtins(settings: ToolsSettings, client: httpx.AsyncClient) -> list[Builtin]:
    """`weather`, `web_search` and `knowledge_search`, configured or not."""
    limit = settings.max_result_chars
    weather = HttpTool(settings.weather(), client, limit)
    search = HttpTool(settings.search(), client, limit)
    knowledge = KnowledgeBase(settings.weir_rag_url, client, limit, settings.weir_service_token)

    async def run_weather(args: dict[str, Any], ctx: CallContext) -> ToolOutcome:
        return await weather.fetch({"city": str(args.get("city") or "")}, ctx.timeout_s)

    async def run_search(args: dict[str, Any], ctx: CallContext) -> ToolOutcome:
        count = str(args.get("max_results") or 5)
        return await search.fetch(
            {"query": str(args.get("query") or ""), "max_results": count}, ctx.timeout_s
        )

    async def run_knowledge(args: dict[str, Any], ctx: CallContext) -> ToolOutcome:
        query, top_k = str(args.get("query") or ""), int(args.get("top_k") or 5)
        return await knowledge.search(query, top_k, ctx.user_id, ctx.timeout_s)

    text, count = {"type": "string"}, {"type": "integer", "minimum": 1, "maximum": 20}
    return [
        Builtin(
            _info("weather", "Current weather for a city.", weather.configured,
                  _schema({"city": text}, ["city"])),
            run_weather,
            weather.status,
        ),
        Builtin(
            _info("web_search", "Search the web; returns the provider's results.",
                  search.configured, _schema({"query": text, "max_results": count}, ["query"])),
            run_search,
            search.status,
        ),
        Builtin(
            _info("knowledge_search",
                  "Search the knowledge base (uploaded documents); returns cited passages.",
                  knowledge.configured, _schema({"query": text, "top_k": count}, ["query"])),
            run_knowledge,
            knowledge.status,
        ),
    ]  # fmt: skip


def _info(name: str, description: str, configured: bool, schema: dict[str, Any]) -> ToolInfo:
    suffix = "" if configured else " Not configured on this deployment."
    return ToolInfo(
        name=name, description=description + suffix, input_schema=schema, server=BUILTIN
    )
