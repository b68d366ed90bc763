"""OpenAI wire payloads of the scripted server: SSE chunks and whole completions."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from weir_common.testing.script import (
    ScriptRule,
    count_tokens,
    default_reply,
    tool_call_chunks,
    word_chunks,
)


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n"


async def sse_stream(body: dict[str, Any], rule: ScriptRule | None) -> AsyncIterator[str]:
    """Server-sent events of one streamed answer, ending with ``data: [DONE]``."""
    cid, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", str(body.get("model", "scripted"))
    rule = rule or ScriptRule()
    if rule.delay_s:
        await asyncio.sleep(rule.delay_s)
    yield _chunk(cid, model, {"role": "assistant", "content": ""})
    text = rule.text if rule.text is not None or rule.tool_calls else default_reply(body)
    pieces = word_chunks(text or "", rule.chunk_words)
    for i, piece in enumerate(pieces):
        if i and rule.token_delay_s:
            await asyncio.sleep(rule.token_delay_s)
        yield _chunk(cid, model, {"content": piece})
    for deltas in tool_call_chunks(rule.tool_calls or []):
        if rule.token_delay_s:
            await asyncio.sleep(rule.token_delay_s)
        yield _chunk(cid, model, {"tool_calls": deltas})
    yield _chunk(cid, model, {}, "tool_calls" if rule.tool_calls else "stop")
    if rule.reports_usage and (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": count_tokens(body), "completion_tokens": len(pieces)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        payload = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": usage,
        }
        yield f"data: {json.dumps(payload)}\n\n"
    yield "data: [DONE]\n\n"


async def whole_completion(body: dict[str, Any], rule: ScriptRule | None) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` object (after the rule's delay)."""
    rule = rule or ScriptRule()
    if rule.delay_s:
        await asyncio.sleep(rule.delay_s)
    text = rule.text if rule.text is not None or rule.tool_calls else default_reply(body)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if rule.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id or f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(rule.tool_calls)
        ]
    prompt, completion = count_tokens(body), len((text or "").split())
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "scripted")),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if rule.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
