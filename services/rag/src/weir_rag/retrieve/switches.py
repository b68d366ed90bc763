"""Every retrieval stage behind a switch, for ablation (F14): one frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

from weir_common.search.fusion import CANDIDATES_PER_RESULT, HYBRID_RRF_K

RewriteLevel = Literal["off", "light", "llm", "both"]
RerankMode = Literal["none", "llm"]


@dataclass(frozen=True, slots=True)
class RetrievalSwitches:
    """Which stages run and with which parameters.

    Fusion defaults to dense 0.5 / BM25 0.5 with RRF k=5, not the seed's 0.8 / 0.2 with
    k=60: on the LoCoMo turn benchmark (``bench/retrieval_quality.py``) the seed's setting
    gave recall@10 0.596 (below BM25 alone, 0.591 + noise) and this one 0.651, with recall@5
    0.519 → 0.568. Cells around it (weights 0.4–0.6, k 2–10) are within ±0.005 recall@10;
    this is the middle of that plateau.
    """

    dense: bool = True
    lexical: bool = True
    dense_weight: float = 0.5
    lexical_weight: float = 0.5
    rrf_k: int = HYBRID_RRF_K
    candidates_per_retriever: int = CANDIDATES_PER_RESULT  # each retriever returns k × this
    fused_pool: int = 4  # the fused list is cut to k × this before diversity and rerank
    short_chunk_penalty: bool = True
    short_chunk_chars: int = 50
    short_chunk_ratio: float = 0.25  # of the pool's score range
    source_diversity: bool = True
    max_per_source: int = 3
    rerank: RerankMode = "none"
    query_rewrite: RewriteLevel = "off"
    dual_storage: bool = True

    def with_(self, **changes: object) -> RetrievalSwitches:
        """A copy with some switches changed (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def diff(self, base: RetrievalSwitches | None = None) -> dict[str, object]:
        """The switches that differ from ``base`` (the defaults when None)."""
        ref = base if base is not None else RetrievalSwitches()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(ref, f.name)
        }

    def __post_init__(self) -> None:
        if not (self.dense or self.lexical):
            raise ValueError("at least one retriever (dense or lexical) must be on")
        if self.rrf_k < 1 or self.candidates_per_retriever < 1 or self.fused_pool < 1:
            raise ValueError("rrf_k, candidates_per_retriever and fused_pool must be >= 1")
