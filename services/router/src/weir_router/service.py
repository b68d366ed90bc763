"""Routing and answer generation: the logic, free of any broker."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import structlog

from weir_common.events import (
    AnswerGenerated,
    AnswerGenerateRequested,
    Intent,
    ProposedCall,
    RouteDecided,
    RouteRequested,
    ToolInfo,
)
from weir_common.llm import (
    EvidencePassage,
    LLMClient,
    LLMError,
    OfflineRequest,
    StreamEnd,
    TextDelta,
    ToolCallsReady,
    ToolResult,
    ToolSpec,
    offline_answer,
    stream_text,
)
from weir_router.catalog import Catalog
from weir_router.coalesce import Coalescer
from weir_router.intent import Classification, IntentClassifier
from weir_router.prompt import build_messages
from weir_router.route_catalog import CatalogueMatcher
from weir_router.settings import RouterSettings
from weir_router.shortlist import Shortlister

log = structlog.get_logger(__name__)
SendDelta = Callable[[int, str], Awaitable[None]]


def asks_catalogue(found: Classification) -> bool:
    """Whether the catalogue may route a message the rules classified as `found`.

    Knowledge (the rules' default) may be a request for a connected tool, and so may a user
    telling what they need ("I am looking for a psychiatrist in Santa Rosa"). Greetings, small
    talk, questions about the user and the rules' own tool routes are never overridden.
    """
    return found.intent is Intent.KNOWLEDGE or found.rule.startswith("chat:self:")


async def decide_route(
    classifier: IntentClassifier,
    cmd: RouteRequested,
    matcher: CatalogueMatcher | None = None,
    tools: Sequence[ToolInfo] = (),
) -> RouteDecided:
    """Classify the message with the keyword rules; when they chose no tool route, ask the
    tool catalogue (`matcher`) whether a connected tool fits, and route there if one does.

    The run records which path decided: the rule label (``data:logs:错误日志``,
    ``default:knowledge``) or ``catalogue:<tool>:<score>`` / ``catalogue:<tool>:named``.
    """
    found = classifier.classify(cmd.query)
    intent, route, rule = found.intent, found.route, found.rule
    if matcher is not None and tools and asks_catalogue(found):
        try:
            fit = await matcher.best(cmd.query, tools)
        except LLMError as exc:  # a remote embedder is down: the rules' decision stands
            log.warning("route.catalogue.unavailable", run_id=cmd.run_id, error=str(exc))
            fit = None
        if fit is not None:
            intent, route, rule = fit.intent, fit.route, fit.rule
            log.info("route.catalogue", run_id=cmd.run_id, tool=fit.tool.name, rule=rule,
                     rules_said=found.rule)  # fmt: skip
    # the message's passage vector, when the catalogue embedded it (memory embeds the same)
    offered = matcher.shortlister.offer(cmd.query) if matcher and matcher.shortlister else None
    return RouteDecided(
        request_id=cmd.event_id,
        intent=intent,
        route=route,
        rule=rule,
        message_vector=offered,
        **cmd.envelope(),
    )


class AnswerGenerator:
    """Streams an answer from the model, or from the offline responder when none is set.

    With a model and calls left in the run's budget, the model is offered the connected
    tools closest to the request (native function calling): it may answer, or ask for tools;
    its calls go back to the harness, which runs them and asks for the answer again."""

    def __init__(
        self,
        llm: LLMClient | None,
        settings: RouterSettings,
        catalog: Catalog | None = None,
        shortlister: Shortlister | None = None,
    ) -> None:
        self._llm = llm
        self._settings = settings
        self._catalog = catalog or Catalog()
        self._shortlister = shortlister

    async def generate(self, cmd: AnswerGenerateRequested, send: SendDelta) -> AnswerGenerated:
        """Generate, sending coalesced deltas through `send`; raises `LLMError` on failure."""
        out = Coalescer(send, self._settings.delta_max_chars, self._settings.delta_max_delay_s)
        if self._llm is None:
            return await self._offline(cmd, out)
        specs = await self._offered(cmd)
        known = {spec.name for spec in specs}
        model, prompt_tokens, completion_tokens = None, 0, 0
        calls: list[ProposedCall] = []
        # the client makes the GenAI span (weir_common.llm.genai) inside the run's trace
        async for item in self._llm.stream(build_messages(cmd), "pro", specs or None):
            if isinstance(item, TextDelta):
                await out.add(item.text)
            elif isinstance(item, ToolCallsReady):
                calls = [ProposedCall(tool=c.name, arguments=c.arguments)
                         for c in item.tool_calls if c.name in known]  # fmt: skip
            elif isinstance(item, StreamEnd):
                model = item.model
                prompt_tokens = item.usage.prompt_tokens
                completion_tokens = item.usage.completion_tokens
        await out.flush()
        return AnswerGenerated(
            request_id=cmd.event_id,
            text=out.text,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            tool_calls=calls[: cmd.tool_calls_left],
            **cmd.envelope(),
        )

    async def _offered(self, cmd: AnswerGenerateRequested) -> list[ToolSpec]:
        """The shortlisted tools, when the run may still call some."""
        tools = list(self._catalog.tools.values())
        if cmd.tool_calls_left < 1 or not tools:
            return []
        if self._shortlister is not None:
            tools = await self._shortlister.shortlist(cmd.query, tools)
        return [ToolSpec(name=t.name, description=t.description, parameters=t.input_schema)
                for t in tools]  # fmt: skip

    async def _offline(self, cmd: AnswerGenerateRequested, out: Coalescer) -> AnswerGenerated:
        answer = offline_answer(
            OfflineRequest(
                question=cmd.query,
                history=[(t.user, t.assistant) for t in cmd.context.history],
                memory_facts=cmd.context.facts,
                evidence=[
                    EvidencePassage(source=p.source, locator=p.locator, text=p.text)
                    for p in cmd.evidence
                ],
                # whatever the tools returned for this turn is quoted, relevant-looking or not
                tool_results=[
                    ToolResult(
                        tool=o.tool, arguments=o.arguments, content=o.content, is_error=o.is_error
                    )
                    for o in cmd.observations
                ],
                capability_notes=list(cmd.capability_notes),
            )
        )
        for piece in stream_text(answer, self._settings.offline_chunk_chars):
            await out.add(piece)
        await out.flush()
        return AnswerGenerated(
            request_id=cmd.event_id, text=out.text, offline=True, **cmd.envelope()
        )
