"""Helpers turning litellm/OpenAI response objects (or dicts) into weir types."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from weir_common.llm.types import (
    Completion,
    LLMError,
    StreamEnd,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolCallsReady,
    Usage,
)


def field(obj: Any, name: str) -> Any:
    """Read ``name`` from a dict or an object; None when absent."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def parse_usage(raw: Any) -> Usage | None:
    """Usage from a provider usage block, or None when there is none."""
    if raw is None:
        return None
    prompt = field(raw, "prompt_tokens")
    completion = field(raw, "completion_tokens")
    if prompt is None and completion is None:
        return None
    return Usage(prompt_tokens=int(prompt or 0), completion_tokens=int(completion or 0))


@dataclass
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = dc_field(default_factory=list)


@dataclass
class ToolCallAssembler:
    """Collects OpenAI tool-call deltas (by ``index``) into complete :class:`ToolCall` s."""

    _parts: dict[int, _Partial] = dc_field(default_factory=dict)

    def add(self, deltas: Any) -> None:
        """Add one chunk's ``delta.tool_calls`` list (or a full ``message.tool_calls``)."""
        for position, delta in enumerate(deltas or []):
            index = field(delta, "index")
            key = int(index) if index is not None else position
            part = self._parts.setdefault(key, _Partial())
            call_id = field(delta, "id")
            if call_id:
                part.id = str(call_id)
            function = field(delta, "function")
            name = field(function, "name")
            if name:
                part.name = str(name)
            args = field(function, "arguments")
            if args:
                part.arguments.append(args if isinstance(args, str) else json.dumps(args))

    def finish(self) -> list[ToolCall]:
        """Return the complete calls in index order; malformed JSON raises LLMError."""
        calls: list[ToolCall] = []
        for key in sorted(self._parts):
            part = self._parts[key]
            raw = "".join(part.arguments).strip() or "{}"
            try:
                arguments = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LLMError(
                    True, f"model returned malformed arguments for tool {part.name!r}: {raw!r}"
                ) from exc
            if not isinstance(arguments, dict):
                raise LLMError(True, f"tool {part.name!r} arguments are not an object: {raw!r}")
            calls.append(ToolCall(id=part.id or f"call_{key}", name=part.name, arguments=arguments))
        return calls


async def collect(stream: AsyncIterable[StreamItem]) -> Completion:
    """Drain a stream from :meth:`LLMClient.stream` into one :class:`Completion`."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    end: StreamEnd | None = None
    async for item in stream:
        if isinstance(item, TextDelta):
            texts.append(item.text)
        elif isinstance(item, ToolCallsReady):
            calls.extend(item.tool_calls)
        else:
            end = item
    return Completion(
        text="".join(texts),
        tool_calls=calls,
        model=end.model if end else "",
        usage=end.usage if end else Usage(),
        finish_reason=end.finish_reason if end else None,
    )
