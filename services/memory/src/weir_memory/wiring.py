"""Building the memory engines from settings: short-term store, long-term memory.

Long-term memory is built in a start-up hook, because choosing its embedder needs a probe:
when no embedding model answers, term-frequency vectors take over (seed 000's fallback).
Before it takes a turn, every stored vector is brought to the chosen embedder and the index
is rebuilt from PostgreSQL when it may hold anything else (`reembed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from weir_common.embeddings import Embedder, make_embedder
from weir_common.engines import redis_client
from weir_common.llm import make_llm_client
from weir_common.runtime import Hook
from weir_common.search.lexical_factory import make_lexical

from .conversations.repository import ConversationStore
from .conversations.service import Conversations
from .db import Database
from .flash import Flash
from .log.index import LexicalLog
from .log.service import LogWeights, TurnLog
from .log.store import LogStore
from .longterm.analyzer import Analyzer
from .longterm.ledger import Ledger
from .longterm.models import Clock
from .longterm.pending import PendingStore
from .longterm.policy import Policy
from .longterm.profile import Profile
from .longterm.profile_repository import ProfileStore
from .longterm.repository import ItemStore
from .longterm.semantic import SemanticMemory
from .longterm.service import FusionSettings, LongTermMemory, RecallSettings
from .longterm.similarity import Similarity, floor_for
from .longterm.tf_embedder import TermFrequencyEmbedder
from .longterm.vector_index import UserVectorIndex
from .longterm.vector_rows import VectorRows, embedder_tag
from .longterm.vector_upkeep import VectorUpkeep
from .repository import InMemoryShortTermStore, RedisShortTermStore, ShortTermStore
from .sessions.repository import SessionStore
from .sessions.service import SessionMemory
from .settings import MemorySettings

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class StoreWiring:
    """A short-term store and the hooks that open and close its engine."""

    store: ShortTermStore
    on_startup: list[Hook] = field(default_factory=list)
    on_shutdown: list[Hook] = field(default_factory=list)


def make_store(settings: MemorySettings) -> StoreWiring:
    """The short-term store the settings ask for (it holds the window plus the turns about
    to be compressed)."""
    window = settings.stm_window_turns + settings.stm_discard_turns
    ttl_s = settings.stm_ttl_s
    if settings.stm_backend == "memory":
        return StoreWiring(InMemoryShortTermStore(window=window, ttl_s=ttl_s))
    store = RedisShortTermStore(redis_client(settings.redis_url), window=window, ttl_s=ttl_s)
    return StoreWiring(store, on_startup=[store.ping], on_shutdown=[store.close])


def make_flash(settings: MemorySettings) -> Flash:
    """The FLASH model for memory's helper calls, if one is configured and allowed."""
    llm = make_llm_client() if settings.memory_llm else None
    return Flash(llm, settings.memory_llm_timeout_s)


async def choose_embedder(settings: MemorySettings) -> tuple[Embedder, bool]:
    """The configured embedder if it answers, else term-frequency vectors; True when that
    is the fallback rather than the configuration."""
    if settings.embedder == "tf":
        return TermFrequencyEmbedder(), False
    embedder = make_embedder()
    try:
        await embedder.probe()
    except Exception as exc:  # any failure of the model means: fall back, loudly
        log.warning("memory.embedder.unavailable", embedder=embedder.name, error=str(exc),
                    fallback=TermFrequencyEmbedder.name)  # fmt: skip
        return TermFrequencyEmbedder(), True
    return embedder, False


def make_lexical_log(settings: MemorySettings, db: Database, clock: Clock) -> LexicalLog:
    """The turn log's BM25 index: Elasticsearch, or tantivy under `DATA_DIR/memory-log`."""
    s = settings
    root = (s.data_dir / "memory-log").resolve()
    engine = make_lexical(
        s.log_lexical_backend, es_url=s.es_url, es_prefix=s.log_es_index_prefix, tantivy_root=root
    )
    es = s.log_lexical_backend == "elasticsearch" or (s.log_lexical_backend == "auto" and s.es_url)
    name = f"elasticsearch:{s.log_es_index_prefix}" if es else f"tantivy:{root}"
    return LexicalLog(engine, LogStore(db, s.log_context_chars), name, clock)


def make_turn_log(
    settings: MemorySettings, lexical: LexicalLog, index: UserVectorIndex, similarity: Similarity,
    clock: Clock,
) -> TurnLog:  # fmt: skip
    """Search and retention of the turn log, per the settings."""
    s = settings
    return TurnLog(
        lexical, index, similarity,
        weights=LogWeights(s.recall_weight_dense, s.recall_weight_lexical, s.recall_weight_time),
        min_similarity=s.log_min_similarity, retention_days=s.log_retention_days, clock=clock,
    )  # fmt: skip


def make_index(settings: MemorySettings) -> UserVectorIndex:
    """Milvus, or vectors in this process."""
    if settings.vector_backend == "memory":
        return UserVectorIndex.in_process()
    return UserVectorIndex.milvus(settings.milvus_uri, settings.vector_collection)


@dataclass
class LongTermWiring:
    """Long-term memory and its engines, opened by `open` and closed by `close`."""

    settings: MemorySettings
    flash: Flash
    clock: Clock
    embedder: Embedder | None = None  # None: chosen from the settings at `open`
    background: bool = False  # True: turns are analysed later (`longterm.worker`)
    memory: LongTermMemory | None = None
    _db: Database | None = None
    _index: UserVectorIndex | None = None
    _lexical: LexicalLog | None = None

    @property
    def index(self) -> UserVectorIndex:
        """The open vector index."""
        if self._index is None:
            raise RuntimeError("LongTermWiring.open() was not called")
        return self._index

    async def open(self) -> LongTermMemory:
        """Connect PostgreSQL and the index, choose the embedder, align the stored vectors
        with it, build the memory."""
        s = self.settings
        self._db = Database(s.database_url)
        await self._db.open()
        await self.flash.warm()
        chosen, fallback = (self.embedder, False) if self.embedder else await choose_embedder(s)
        dimension = await chosen.probe()
        tag = embedder_tag(chosen.name, dimension)
        self._index = index = make_index(s)
        await index.open(dimension)
        await VectorUpkeep(self._db, VectorRows(self._db, tag, dimension), chosen, index,
                           index.durable, may_reembed=not fallback,
                           context_weight=s.log_context_weight).run()  # fmt: skip
        similarity = Similarity(floor_for(chosen.name, s.similarity_floor))
        semantic = SemanticMemory(
            ItemStore(self._db, tag), index, chosen, similarity, Policy.from_settings(s),
            self.clock,
        )  # fmt: skip
        sessions = SessionStore(self._db, tag)
        self._lexical = lexical = make_lexical_log(s, self._db, self.clock)
        await lexical.open()
        self.memory = LongTermMemory(
            semantic=semantic,
            profile=Profile(ProfileStore(self._db)),
            sessions=SessionMemory(
                sessions, index, similarity, s.recall_max_search_results, s.log_context_weight
            ),
            ledger=Ledger(self._db),
            analyzer=Analyzer(self.flash),
            recall=RecallSettings(
                s.recall_keywords,
                s.recall_trigger_similarity,
                s.recall_max_sessions,
                auto=s.recall_auto,
            ),
            clock=self.clock,
            conversations=Conversations(ConversationStore(self._db), self.flash, index, lexical),
            pending=PendingStore(self._db) if self.background else None,
            log=make_turn_log(s, lexical, index, similarity, self.clock),
            fusion=FusionSettings(
                s.recall_candidates_per_result,
                s.recall_weight_memories,
                s.recall_turns_per_memory,
                s.recall_rrf_k,
                s.recall_question_weight,
            ),
            map_queries=s.query_map,
        )
        log.info("memory.long_term.opened", embedder=tag, floor=similarity.floor,
                 vectors=s.vector_backend, model=self.flash.available)  # fmt: skip
        return self.memory

    async def close(self) -> None:
        """Close the index and the pool (again: nothing to do)."""
        index, self._index = self._index, None
        db, self._db = self._db, None
        lexical, self._lexical = self._lexical, None
        if lexical is not None:
            await lexical.close()
        if index is not None:
            await index.close()
        if db is not None:
            await db.close()
