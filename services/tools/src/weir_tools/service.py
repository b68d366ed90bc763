"""The tools logic: one catalogue over built-in and MCP tools, calls, and replays by key.

A call with an idempotency key runs at most once while its result is kept: a repeated key
gets the stored result back (`replayed`), and a duplicate that arrives while the first is
still running waits for it instead of calling again. Only results the tool itself gave are
stored; failures around it (server down, time-out, unknown tool) are not, so a retry calls
again.

Across processes and restarts, a key is claimed in the store before the call. A claimed
key without a result (another replica is calling, or one crashed mid-call) is not called
again unless the tool is safe to repeat (built-ins, and MCP tools annotated read-only or
idempotent): the caller gets an error observation saying the outcome is unknown.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from weir_common.events import (
    ServerStatus,
    ToolCallItem,
    ToolCallResult,
    ToolsCatalogUpdated,
)

from .builtins import BUILTIN, Builtin, CallContext
from .mcp_manager import McpManager
from .mcp_session import describe
from .models import ToolOutcome, truncate
from .repository import ResultStore, StoreError

log = structlog.get_logger(__name__)

TIMEOUT_GRACE_S = 1.0


class ToolService:
    """Built-in tools first, then every MCP server's; results kept in `store`."""

    def __init__(
        self,
        builtins: list[Builtin],
        mcp: McpManager,
        store: ResultStore,
        *,
        max_result_chars: int = 20_000,
    ) -> None:
        self._builtins = {b.info.name: b for b in builtins}
        self._mcp = mcp
        self._store = store
        self._max_chars = max_result_chars
        self._inflight: dict[str, asyncio.Task[ToolOutcome]] = {}

    def catalog(self) -> ToolsCatalogUpdated:
        """Every tool that can be called now, and the state of every server and provider."""
        tools = [b.info for b in self._builtins.values()]
        tools += [r.info for r in self._mcp.routes().values() if r.server.connected]
        always = [name for name, b in self._builtins.items() if b.status is None]
        servers = [ServerStatus(name=BUILTIN, connected=True, detail=", ".join(always))]
        servers += [b.status() for b in self._builtins.values() if b.status is not None]
        return ToolsCatalogUpdated(tools=tools, servers=[*servers, *self._mcp.statuses()])

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_s: float,
        idempotency_key: str | None = None,
        user_id: str | None = None,
    ) -> ToolOutcome:
        """Call `tool`; with a key, replay its stored result instead of calling again.

        Raises `StoreError` when the result store cannot be read: calling anyway could run
        a side effect twice.
        """
        context = CallContext(timeout_s=timeout_s, user_id=user_id)
        if idempotency_key is None:
            return await self._run(tool, arguments, context)
        stored = await self._store.get(idempotency_key)
        if stored is not None:
            log.info("tool.replayed", tool=tool, key=idempotency_key)
            return stored.model_copy(update={"replayed": True})
        task = self._inflight.get(idempotency_key)
        if task is not None:
            return (await asyncio.shield(task)).model_copy(update={"replayed": True})
        if not await self._store.claim(idempotency_key, user_id):
            stored = await self._store.get(idempotency_key)
            if stored is not None:
                return stored.model_copy(update={"replayed": True})
            if not self._repeatable(tool):
                log.warning("tool.outcome_unknown", tool=tool, key=idempotency_key)
                return ToolOutcome.failure(
                    f"an earlier call of {tool} with this idempotency key started but its "
                    "outcome is unknown; it was not repeated, as the tool may not be safe to repeat"
                )
            log.info("tool.repeated", tool=tool, key=idempotency_key)
        task = asyncio.create_task(self._run_and_store(idempotency_key, tool, arguments, context))
        self._inflight[idempotency_key] = task
        task.add_done_callback(lambda _: self._inflight.pop(idempotency_key, None))
        return await asyncio.shield(task)

    async def call_batch(
        self, calls: list[ToolCallItem], *, timeout_s: float, user_id: str | None
    ) -> list[ToolCallResult]:
        """Run a step's calls concurrently, each under its own idempotency key (a retried
        step replays the calls that already finished); a `StoreError` of any call is
        raised once every call has ended."""
        results = await asyncio.gather(
            *(self._one(call, timeout_s, user_id) for call in calls), return_exceptions=True
        )
        failed = next((r for r in results if isinstance(r, StoreError)), None)
        if failed is not None:
            raise failed
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, ToolCallResult)]

    async def _one(
        self, call: ToolCallItem, timeout_s: float, user_id: str | None
    ) -> ToolCallResult:
        outcome = await self.call(
            call.tool,
            call.arguments,
            timeout_s=timeout_s,
            idempotency_key=call.idempotency_key,
            user_id=user_id,
        )
        return ToolCallResult(
            tool=call.tool,
            arguments=call.arguments,
            content=outcome.content,
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
        )

    async def _run_and_store(
        self, key: str, tool: str, arguments: dict[str, Any], context: CallContext
    ) -> ToolOutcome:
        outcome = await self._run(tool, arguments, context)
        try:
            if outcome.stored:
                await self._store.put(key, outcome, context.user_id)
            else:  # a failure around the tool: a retry may call
                await self._store.release(key)
        except StoreError as exc:
            # the tool ran: its result matters more than the replay guarantee
            log.warning("tool.result_not_stored", tool=tool, key=key, error=str(exc))
        return outcome

    async def forget_user(self, user_id: str) -> int:
        """ "Forget me": delete the stored results and markers of the user's calls; how many
        keys there were. Raises `StoreError` when the store cannot be reached."""
        forgotten = await self._store.forget_user(user_id)
        log.info("tools.user_forgotten", user_id=user_id, keys=forgotten)
        return forgotten

    def _repeatable(self, tool: str) -> bool:
        """Built-ins only read; MCP tools say so in their annotations."""
        route = self._mcp.routes().get(tool)
        return tool in self._builtins or (route is not None and route.repeatable)

    async def _run(self, tool: str, arguments: dict[str, Any], context: CallContext) -> ToolOutcome:
        began = time.perf_counter()
        builtin = self._builtins.get(tool)
        route = self._mcp.routes().get(tool)
        if builtin is not None:
            outcome = await self._run_builtin(builtin, arguments, context)
        elif route is not None:
            outcome = await self._mcp.call(route, arguments, context.timeout_s)
        else:
            outcome = ToolOutcome.failure(self._unknown(tool))
        ms = round((time.perf_counter() - began) * 1000, 3)
        log.info("tool.called", tool=tool, is_error=outcome.is_error, duration_ms=ms)
        content = truncate(outcome.content, self._max_chars)
        return outcome.model_copy(update={"content": content, "duration_ms": ms})

    async def _run_builtin(
        self, builtin: Builtin, arguments: dict[str, Any], context: CallContext
    ) -> ToolOutcome:
        name = builtin.info.name
        try:
            async with asyncio.timeout(context.timeout_s + TIMEOUT_GRACE_S):
                return await builtin.run(arguments, context)
        except TimeoutError:
            return ToolOutcome.failure(f"tool {name} timed out after {context.timeout_s:g}s")
        except (TypeError, ValueError) as exc:
            return ToolOutcome(
                content=f"invalid arguments for {name}: {describe(exc)}", is_error=True
            )

    def _unknown(self, tool: str) -> str:
        available = sorted([*self._builtins, *(n for n, r in self._mcp.routes().items()
                                              if r.server.connected)])  # fmt: skip
        message = f"unknown tool {tool!r}; available: {', '.join(available)}"
        down = [s.name for s in self._mcp.servers if not s.connected]
        return message + (f"; servers unavailable: {', '.join(down)}" if down else "")

    async def start(self) -> None:
        """Connect the MCP servers (one that is down is reported in the catalogue)."""
        await self._mcp.start()

    async def refresh(self) -> None:
        """Re-list tools and try to reconnect servers that are down."""
        await self._mcp.refresh()

    async def close(self) -> None:
        """Close MCP sessions and the result store."""
        await self._mcp.close()
        await self._store.close()
