"""Rules, state and payload helpers of the scripted OpenAI-compatible server."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from weir_common.search.text import CJK

EMBEDDING_DIM = 64
_TOKEN = re.compile(f"[a-z0-9]+|[{CJK}]", re.IGNORECASE)


class ScriptToolCall(BaseModel):
    """A tool call the scripted model will request."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptRule(BaseModel):
    """One scripted behaviour; the first rule that matches a chat request answers it.

    ``match`` is a regex searched in the last user message; ``on_request`` is the 1-based
    number of the chat request; ``with_tools`` True (False) matches only requests that do
    (do not) offer tools, which tells an agent's calls from background ones such as memory's
    analysis. Without any of them, the rule matches every request.
    """

    match: str | None = None
    on_request: int | None = None
    text: str | None = None
    tool_calls: list[ScriptToolCall] | None = None
    chunk_words: int = Field(default=2, ge=1)
    delay_s: float = 0.0
    token_delay_s: float = 0.0
    fail_times: int = 0
    status: int = 500
    once: bool = False
    with_tools: bool | None = None
    #: False: a stream carries no usage even when asked for it (some local servers)
    reports_usage: bool = True


@dataclass
class _RuleState:
    rule: ScriptRule
    failures: int = 0
    used: bool = False


@dataclass
class ScriptState:
    """Mutable server state: the script, counters and every request received."""

    rules: list[_RuleState] = field(default_factory=list)
    recorded: list[dict[str, Any]] = field(default_factory=list)
    chat_count: int = 0

    def set_script(self, rules: list[ScriptRule]) -> None:
        """Replace the script (counters of the new rules start at zero)."""
        self.rules = [_RuleState(rule) for rule in rules]

    def reset(self) -> None:
        """Forget the script, the recorded requests and the counters."""
        self.rules = []
        self.recorded = []
        self.chat_count = 0

    def record(self, path: str, body: dict[str, Any]) -> None:
        """Remember one request body."""
        self.recorded.append({"path": path, "body": body})

    def pick(self, last_user: str, offers_tools: bool = False) -> tuple[ScriptRule | None, bool]:
        """Return (matching rule or None, whether this request must fail)."""
        for state in self.rules:
            rule = state.rule
            if rule.once and state.used:
                continue
            if rule.match is not None and not re.search(rule.match, last_user, re.DOTALL):
                continue
            if rule.on_request is not None and rule.on_request != self.chat_count:
                continue
            if rule.with_tools is not None and rule.with_tools != offers_tools:
                continue
            if state.failures < rule.fail_times:
                state.failures += 1
                return rule, True
            state.used = True
            return rule, False
        return None, False


def parse_script(raw: Any) -> list[ScriptRule]:
    """Accept ``[rule, ...]`` or ``{"rules": [rule, ...]}``."""
    items = raw.get("rules", []) if isinstance(raw, dict) else raw
    return [ScriptRule.model_validate(item) for item in items or []]


def last_user_message(body: dict[str, Any]) -> str:
    """Text of the last user message (multi-part content joined)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def default_reply(body: dict[str, Any]) -> str:
    """``scripted: <last user message> (messages: N)`` so tests can see the context size."""
    count = len(body.get("messages") or [])
    return f"scripted: {last_user_message(body)} (messages: {count})"


def word_chunks(text: str, words: int) -> list[str]:
    """Split ``text`` into pieces of ``words`` words each, keeping all whitespace."""
    pieces = re.findall(r"\s*\S+", text) or ([text] if text else [])
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]


def count_tokens(body: dict[str, Any]) -> int:
    """Rough prompt size: words in all messages."""
    return sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])


def hash_embedding(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """Deterministic unit vector: signed feature hashing of words / CJK characters.

    Texts sharing words get similar vectors; the empty text gets a fixed vector.
    """
    vec = [0.0] * dim
    tokens = [t.lower() for t in _TOKEN.findall(text)] or [""]
    for token in tokens:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dim
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = sum(v * v for v in vec) ** 0.5
    if norm == 0.0:
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


def encode_embedding(vec: list[float], encoding_format: str | None) -> list[float] | str:
    """Float list, or base64 of little-endian float32 when the client asks for it."""
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
    return vec


def tool_call_chunks(calls: list[ScriptToolCall]) -> list[list[dict[str, Any]]]:
    """OpenAI ``delta.tool_calls`` lists: a header per call, then argument fragments."""
    deltas: list[list[dict[str, Any]]] = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index}"
        deltas.append(
            [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        )
        args = json.dumps(call.arguments)
        step = max(1, len(args) // 3 + 1)
        deltas.extend(
            [{"index": index, "function": {"arguments": args[i : i + step]}}]
            for i in range(0, len(args), step)
        )
    return deltas
