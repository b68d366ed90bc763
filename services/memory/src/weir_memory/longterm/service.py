"""Long-term memory as one unit: what a turn should know, and what a turn leaves behind.

Reading (seed 000's read phase, seed 003's selection, seed 001's recall): the profile and
preference block, memories selected by topic slices, and past sessions when recall is
triggered. Writing: preference rules at once, the analyzer's verdict, the chat and its
session, the memory (deduplicated), then consolidation after every few new memories.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime

import structlog

from weir_common.embeddings import Embedder
from weir_common.embeddings.query_map import query_map
from weir_common.events import PassageVector, Turn
from weir_common.search.fusion import CANDIDATES_PER_RESULT, HYBRID_RRF_K
from weir_common.tombstone import forgotten

from ..conversations.service import Conversations
from ..log.service import Candidates, TurnLog
from ..log.temporal import window
from ..sessions.recall import Focus, RecallResult, Scenario, Trigger, detect
from ..sessions.service import SessionMemory
from ..summary import chat_text, turn_detail
from . import preferences, topics
from .analyzer import Analyzer
from .consolidator import Consolidator
from .fusion import Entry, fuse, render, telling
from .ledger import Holdings, Ledger
from .models import Analysis, Clock, Layer, Vector
from .offered import OfferedPassages
from .pending import PendingStore
from .profile import Profile
from .query_vectors import QueryVectors
from .semantic import SemanticMemory, item_id
from .text import is_chinese
from .vector_index import sharing_searches

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Recollection:
    """What long-term memory contributes to one turn; `searched` with no `memories` is seed
    003's "no hit"."""

    preferences: str | None = None
    preference_lines: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    told: list[str] = field(default_factory=list)  # `memories` less the turns that only ask
    searched: bool = False
    session_summary: str | None = None
    recall: RecallResult | None = None
    sources: list[str] = field(default_factory=list)  # provenance: run ids behind it all


@dataclass(frozen=True)
class Prepared:
    """A turn's analysis and the texts its long-term part embeds (see `prepare`)."""

    analysis: Analysis
    texts: list[str]


@dataclass(frozen=True)
class RecallSettings:
    """Seed 001's trigger settings."""

    keywords: Sequence[str] = ()
    trigger_similarity: float = 0.7
    max_sessions: int = 5
    auto: bool = True  # the similarity trigger; off: only `/recall` and keywords recall


@dataclass(frozen=True)
class FusionSettings:
    """How recall fuses memories with the turn log (issue 16)."""

    candidates_per_result: int = CANDIDATES_PER_RESULT  # × k, per retriever (memories,
    # turns by meaning, by words, by time)
    memory_weight: float = 1.0
    turns_per_memory: int = 2
    rrf_k: int = HYBRID_RRF_K
    question_weight: float = 1.0  # kept by a turn of only questions (see `fuse`)

    def candidates(self, k: int) -> int:
        """How many candidates each retriever returns when recall wants `k` entries."""
        return k * self.candidates_per_result


class LongTermMemory:
    """Profile, semantic/episodic memories and sessions of every user."""

    def __init__(
        self,
        *,
        semantic: SemanticMemory,
        profile: Profile,
        sessions: SessionMemory,
        ledger: Ledger,
        analyzer: Analyzer,
        recall: RecallSettings,
        clock: Clock,
        conversations: Conversations | None = None,
        pending: PendingStore | None = None,
        log: TurnLog | None = None,
        fusion: FusionSettings | None = None,
        map_queries: bool = False,
    ) -> None:
        self.semantic = semantic
        self.log = log  # None: recall reads extracted memories only
        self._fusion = fusion or FusionSettings()
        self.pending = pending  # set: a turn's long-term part runs later (`AnalysisWorker`)
        self.conversations = conversations
        self.profile = profile
        self.sessions = sessions
        self.ledger = ledger
        self.analyzer = analyzer
        self.consolidator = Consolidator(semantic, ledger, clock)
        self._recall = recall
        self._clock = clock
        self._queries = QueryVectors()
        # `QUERY_MAP`: the embedder's passage → query map, when it has one
        self._map = query_map(semantic.embedder.name) if map_queries else None
        # passage vectors of messages: the router's, and those `query_vector` made
        self.offered = OfferedPassages()

    @property
    def embedder(self) -> Embedder:
        """The embedder of every vector in this memory."""
        return self.semantic.embedder

    async def recollect(
        self,
        user_id: str,
        conversation_id: str | None,
        query: str,
        focus: Focus | None,
        vector: Vector | None = None,
        *,
        touch: bool = True,
    ) -> Recollection:
        """Preferences, topic-sliced memories, the session's rolling summary and (when
        triggered) recalled sessions; `vector` is the query's embedding when the caller has
        it already; `touch=False` (private mode) leaves the memories' last access as it was."""
        chinese = is_chinese(query)
        profile, held = await asyncio.gather(
            self.profile.get(user_id), self.ledger.holdings(user_id, besides=conversation_id)
        )
        if (
            vector is None
            and not held.any
            and (detect(query, self._recall.keywords, focus) is None)
        ):  # nothing to search (no memories, no other conversation), nothing asked for: no
            # embedding, no search; the current conversation's turns are in the prompt already
            return Recollection(
                preferences=preferences.block(profile, query),
                preference_lines=preferences.lines(profile, chinese),
                searched=True,
                session_summary=await self._summary(user_id, conversation_id),
            )
        vector = vector or await self.query_vector(query, message=True)
        k = self.semantic.policy.recall_top_k
        # the log's candidates and the session recall: one search of the chats
        with sharing_searches(at_least=max(self._fusion.candidates(k), self.sessions.search_limit)):
            entries = await self.recall(
                user_id, query, vector, k, touch=touch, current=conversation_id, held=held
            )
            recall = await self._sessions(user_id, conversation_id, query, vector, focus)
        summary = await self._summary(user_id, conversation_id)
        log.info("memory.recollected", user_id=user_id, entries=len(entries),
                 memories=sum(e.memory is not None for e in entries),
                 recall=recall.scenario.value if recall else None)  # fmt: skip
        runs = [run for e in entries for run in e.sources]
        return Recollection(
            preferences=preferences.block(profile, query),
            preference_lines=preferences.lines(profile, chinese),
            memories=render(entries, chinese),
            told=render(telling(entries), chinese),
            searched=True,
            session_summary=summary,
            recall=recall,
            sources=list(dict.fromkeys([*runs, *(recall.sources if recall else [])])),
        )

    async def recall(
        self,
        user_id: str,
        query: str,
        vector: Vector,
        k: int,
        *,
        touch: bool = False,
        current: str | None = None,
        held: Holdings | None = None,
    ) -> list[Entry]:
        """The best `k` of the user's memories (topic-sliced, seed 003) and logged turns of
        other conversations than `current`, fused; `touch` marks the memories shown as
        accessed. What the user holds none of is not searched (`held`: `Ledger.holdings`,
        when the caller read it already)."""
        n = self._fusion.candidates(k)
        held = held or await self.ledger.holdings(user_id, besides=current)

        async def memories() -> topics.Selection:
            if not held.memories:
                return topics.Selection([], n)
            return await topics.select(
                query, self.query_vector,
                lambda v: self.semantic.recall(user_id, v, touch=False, top_k=n), vector, n,
            )  # fmt: skip

        async def logged(log: TurnLog) -> Candidates:
            if not held.chats:
                return Candidates()
            return await log.candidates(
                user_id, query, vector, n, window=window(query, self._clock()), current=current
            )

        if self.log is None:
            selection = await memories()
            entries = [Entry(r.score, r) for r in selection.memories[:k]]
        else:  # the memories and the log's turns are searched at once
            selection, found = await asyncio.gather(memories(), logged(self.log))
            entries = fuse(
                selection.memories, found.rankings, found.chats, k,
                memory_weight=self._fusion.memory_weight,
                turns_per_memory=self._fusion.turns_per_memory, rrf_k=self._fusion.rrf_k,
                question_weight=self._fusion.question_weight,
            )  # fmt: skip
        shown = [e.memory.item.id for e in entries if e.memory is not None]
        if touch and shown:  # what is injected was accessed, not every candidate
            await self.semantic.items.touch(user_id, shown, self._clock())
        return entries

    def offer_chat(self, user_text: str, vector: PassageVector | None) -> None:
        """Keep the router's passage vector of a message for the chat's vector (the same
        text, `chat_text`), when it is one this memory can take."""
        self.offered.offer(self.embedder, chat_text(user_text), vector)

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """The passage vectors of `texts`: offered ones (:mod:`.offered`) taken, the rest
        embedded in one call."""
        return await self.offered.embed(self.embedder, texts)

    async def _summary(self, user_id: str, conversation_id: str | None) -> str | None:
        """The current session's rolling summary (None outside a conversation)."""
        return await self.sessions.summary(user_id, conversation_id) if conversation_id else None

    async def query_vector(self, text: str, *, message: bool = False) -> Vector:
        """The query vector of `text`, embedded as a query. With `QUERY_MAP` and the
        embedder's query map (:mod:`weir_common.embeddings.query_map`) it is mapped from the
        text's passage vector instead, and a `message`'s passage vector is kept for its chat:
        one model pass serves the recall and the write of a turn."""
        mapped = self._map
        if mapped is None:
            return await self._queries.embed_query(self.embedder, text)

        async def from_passage() -> Vector:
            chat = chat_text(text)
            whole = message and chat == text.strip()  # a longer message's chat is cut
            (passage,) = await self.embed_passages([chat if whole else text])
            if whole:
                self.offered.keep(chat, passage)
            return mapped.query(passage)

        return await self._queries.embed_query(self.embedder, text, from_passage)

    async def _sessions(
        self, user_id: str, current: str | None, query: str, vector: Vector, focus: Focus | None
    ) -> RecallResult | None:
        trigger = detect(query, self._recall.keywords, focus)
        if trigger is None and not self._recall.auto:
            return None
        if trigger is None:  # the third trigger: a past chat close to this message
            found = await self.sessions.topic(
                user_id, vector, current, self._recall.max_sessions,
                min_similarity=self._recall.trigger_similarity,
            )  # fmt: skip
            # the user asked for nothing, so there is nothing to follow up on
            return replace(found, focus=None) if found else None
        return await self._scenario(user_id, current, query, vector, trigger)

    async def _scenario(
        self, user_id: str, current: str | None, query: str, vector: Vector, trigger: Trigger
    ) -> RecallResult | None:
        if trigger.scenario is Scenario.HISTORY:
            return await self.sessions.history(user_id, current)
        if trigger.scenario is Scenario.TOPIC:
            topic_vector = vector if trigger.topic == query.strip() else (
                await self.query_vector(trigger.topic))  # fmt: skip
            found = await self.sessions.topic(
                user_id, topic_vector, current, self._recall.max_sessions
            )
            return found or RecallResult(Scenario.TOPIC)
        session = trigger.session and await self.sessions.by_number(user_id, trigger.session)
        if not session:
            return RecallResult(trigger.scenario)
        if trigger.scenario is Scenario.SESSION:
            return await self.sessions.session(user_id, session)
        topic_vector = await self.query_vector(trigger.topic or query)
        return await self.sessions.within(user_id, session, topic_vector)

    @asynccontextmanager
    async def writing(self, user_id: str, occurred_at: datetime) -> AsyncIterator[bool]:
        """Hold the user's lock (the one "forget me" and consolidation take) for the writes
        of something that happened at `occurred_at`; yields False when that predates the
        user's tombstone, and then nothing may be written. Consolidate after leaving it."""
        async with self.ledger.user_lock(user_id):
            yield not forgotten(occurred_at, await self.ledger.forgotten_at(user_id))

    async def remember(
        self, user_id: str, conversation_id: str, turn: Turn, at: datetime, recent: Sequence[Turn]
    ) -> None:
        """Everything a finished turn leaves in long-term memory (idempotent per run; nothing
        when the turn predates the user's tombstone), then a consolidation when due."""
        due: list[str] = []
        async with self.writing(user_id, at) as admitted:
            if admitted:
                due = await self.write_turn(user_id, conversation_id, turn, at, recent)
        if not admitted:
            log.info("memory.turn_forgotten", user_id=user_id, run_id=turn.run_id)
        await self.index_log()
        if due:
            await self.consolidator.run(user_id, due)

    async def index_log(self) -> None:
        """Bring the turns just written into the log's lexical index (one commit for all)."""
        if self.log is not None:
            await self.log.lexical.catch_up()

    async def prepare(self, turn: Turn, recent: Sequence[Turn]) -> Prepared:
        """The analyzer's verdict on a turn and the texts to embed for it (the chat's text,
        then the memory when it is worth one and says something else); reads nothing of the
        user's."""
        analysis = await self.analyzer.analyze(turn.user, recent)
        worth = analysis.importance >= self.semantic.policy.importance_threshold
        texts = [chat_text(turn.user)]
        if worth and analysis.content and analysis.content != texts[0]:
            texts.append(analysis.content)
        return Prepared(analysis, texts)

    async def write_turn(
        self,
        user_id: str,
        conversation_id: str,
        turn: Turn,
        at: datetime,
        recent: Sequence[Turn],
        *,
        prepared: Prepared | None = None,
        vectors: Sequence[Vector] | None = None,
    ) -> list[str]:
        """The writes of :meth:`remember`, for a caller inside :meth:`writing`; returns the
        consolidation candidates when a consolidation is due (empty otherwise). `prepared`
        and `vectors` are the turn's :meth:`prepare` and its texts' embeddings when a caller
        batched them."""
        if await self.ledger.remembered(user_id, turn.run_id):
            return []
        runs = [turn.run_id]
        await self.profile.learn_text(user_id, turn.user, runs=runs, at=at)
        prepared = prepared or await self.prepare(turn, recent)
        analysis = prepared.analysis
        if analysis.profile:
            await self.profile.learn_pairs(
                user_id, analysis.profile, source="llm", runs=runs, at=at
            )
        worth = analysis.importance >= self.semantic.policy.importance_threshold
        if vectors is None:
            vectors = await self.embed_passages(prepared.texts)
        await self.sessions.record(user_id, conversation_id, turn, at, vectors[0])
        due: list[str] = []
        if worth and analysis.content:
            if analysis.layer is Layer.EPISODIC:  # seed 002: title + summary + detail
                analysis = replace(analysis, detail=turn_detail(turn))
            stored = await self.semantic.store(
                user_id, analysis, runs=runs, at=at, conversation_id=conversation_id,
                new_id=item_id(user_id, turn.run_id, analysis.layer), vector=vectors[-1],
            )  # fmt: skip
            if stored.outcome == "stored" and stored.id:
                due = await self.due_after(user_id, [stored.id])
        await self.ledger.mark_remembered(turn.run_id, user_id, at)
        return due

    async def note_new(self, user_id: str, ids: Sequence[str]) -> None:
        """Count new memories; every `consolidate_every` of them, consolidate them."""
        due = await self.due_after(user_id, ids)
        if due:
            await self.consolidator.run(user_id, due)

    async def due_after(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Count new memories; the pending candidates when `consolidate_every` of them have
        gathered (the caller consolidates them outside the user's lock), else none."""
        pending = await self.ledger.add_new_items(user_id, ids)
        return pending if len(pending) >= self.semantic.policy.consolidate_every else []

    async def consolidate_due(self, interval_s: float) -> int:
        """The scheduled consolidation: every user not consolidated for `interval_s`."""
        users = await self.ledger.due(self._clock(), interval_s)
        for user_id in users:
            await self.consolidator.run(user_id)
        return len(users)
