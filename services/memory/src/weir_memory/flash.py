"""The FLASH model for memory's helper calls (analysis, summaries), bounded in time.

Every caller has an offline fallback, so a failed, slow or unparsable answer is logged and
answered with None instead of raising: memory never fails a turn because a helper model did.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import structlog

from weir_common.llm import ChatMessage, LLMClient, LLMError
from weir_common.llm.litellm_support import import_litellm

log = structlog.get_logger(__name__)

#: Every memory prompt starts with this tag, so logs and test doubles can tell them apart.
TAG = "[weir-memory]"
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class Flash:
    """A FLASH-profile client with a deadline; `None` when no model is configured."""

    def __init__(self, llm: LLMClient | None, timeout_s: float = 10.0) -> None:
        self._llm = llm
        self._timeout_s = timeout_s

    @property
    def available(self) -> bool:
        """True when a model is configured."""
        return self._llm is not None

    async def warm(self) -> None:
        """Import litellm now (seconds), so the first call's deadline is not spent on it."""
        if self._llm is not None:
            await asyncio.to_thread(import_litellm)

    async def text(self, task: str, system: str, user: str) -> str | None:
        """The model's answer, or None (no model, error, timeout)."""
        if self._llm is None:
            return None
        messages = [
            ChatMessage(role="system", content=f"{TAG} {system}"),
            ChatMessage(role="user", content=user),
        ]
        try:
            async with asyncio.timeout(self._timeout_s):
                completion = await self._llm.complete(messages, profile="flash")
        except (LLMError, TimeoutError) as exc:
            log.warning("memory.flash.failed", task=task, error=str(exc) or type(exc).__name__)
            return None
        return completion.text.strip() or None

    async def json(self, task: str, system: str, user: str) -> dict[str, Any] | None:
        """The first JSON object in the model's answer, or None."""
        answer = await self.text(task, system, user)
        match = _OBJECT.search(answer or "")
        if match is None:
            if answer is not None:
                log.info("memory.flash.unparsable", task=task, answer=answer[:200])
            return None
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            log.info("memory.flash.unparsable", task=task, answer=answer[:200] if answer else "")
            return None
        return value if isinstance(value, dict) else None
