"""The retrieval pipeline: rewrite → dense k×3 ∥ BM25 k×3 → RRF → short-chunk penalty →
source diversity → rerank → dual-storage reconstruction → top-k passages with citations."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import structlog

from weir_common.embeddings import Embedder
from weir_common.events.parts import Passage
from weir_common.llm import LLMClient
from weir_common.search.documents import Hit, Scope
from weir_common.search.lexical import LexicalIndex
from weir_rag.index.dense import DenseIndex
from weir_rag.retrieve.fusion import diversify, penalize_short, rrf
from weir_rag.retrieve.rerank import LLMJudgeReranker, NoRerank, Reranker
from weir_rag.retrieve.rewrite import ChainedRewriter, LightRewriter, LLMRewriter, QueryRewriter
from weir_rag.retrieve.switches import RetrievalSwitches

log = structlog.get_logger(__name__)


def to_passage(hit: Hit, dual_storage: bool = True) -> Passage:
    """The model-facing passage: raw content for CSV/JSON chunks (dual storage)."""
    chunk = hit.chunk
    text = chunk.raw_content if dual_storage and chunk.raw_content else chunk.semantic_text
    return Passage(
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        source=chunk.source,
        locator=chunk.locator,
        text=text,
        score=hit.score,
    )


class Retriever:
    """Hybrid retrieval over a :class:`DenseIndex` and a :class:`LexicalIndex`.

    Either index may be None (the switches must then turn its retriever off). ``llm`` is
    needed only for the LLM rewrite and the LLM-judge rerank.
    """

    def __init__(
        self,
        embedder: Embedder,
        dense: DenseIndex | None,
        lexical: LexicalIndex | None,
        *,
        switches: RetrievalSwitches | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        self.embedder = embedder
        self.dense = dense
        self.lexical = lexical
        self.switches = switches or RetrievalSwitches()
        self.llm = llm

    def _rewriter(self, s: RetrievalSwitches) -> QueryRewriter | None:
        if s.query_rewrite == "off":
            return None
        light = LightRewriter()
        if s.query_rewrite == "light":
            return light
        if self.llm is None:
            raise ValueError(f"query_rewrite={s.query_rewrite!r} needs an LLM client")
        llm = LLMRewriter(self.llm)
        return llm if s.query_rewrite == "llm" else ChainedRewriter(light, llm)

    def _reranker(self, s: RetrievalSwitches) -> Reranker:
        if s.rerank == "none":
            return NoRerank()
        if self.llm is None:
            raise ValueError("rerank='llm' needs an LLM client")
        return LLMJudgeReranker(self.llm)

    async def _dense(self, query: str, n: int, scope: Scope) -> list[Hit]:
        if self.dense is None:
            raise ValueError("the dense retriever is on but no DenseIndex was given")
        return await self.dense.search(await self.embedder.embed_query(query), n, scope)

    async def _lexical(self, query: str, n: int, scope: Scope) -> list[Hit]:
        if self.lexical is None:
            raise ValueError("the lexical retriever is on but no LexicalIndex was given")
        return await self.lexical.search(query, n, scope)

    async def search(
        self, query: str, k: int, scope: Scope, switches: RetrievalSwitches | None = None
    ) -> list[Hit]:
        """The top ``k`` chunks after fusion, penalty, diversity and rerank."""
        s = switches or self.switches
        started = time.monotonic()
        rewriter = self._rewriter(s)
        searched = await rewriter.rewrite(query) if rewriter is not None else query
        n = k * s.candidates_per_retriever
        runs: list[tuple[str, float]] = [("dense", s.dense_weight)] if s.dense else []
        runs += [("lexical", s.lexical_weight)] if s.lexical else []
        calls = [
            self._dense(searched, n, scope)
            if name == "dense"
            else self._lexical(searched, n, scope)
            for name, _ in runs
        ]
        results: Sequence[list[Hit]] = await asyncio.gather(*calls)
        if len(runs) == 1:
            pool = results[0][: k * s.fused_pool]
        else:
            fused = rrf([(hits, w) for hits, (_, w) in zip(results, runs, strict=True)], s.rrf_k)
            pool = fused[: k * s.fused_pool]
        if s.short_chunk_penalty:
            pool = penalize_short(pool, s.short_chunk_chars, s.short_chunk_ratio)
        if s.source_diversity:
            pool = diversify(pool, s.max_per_source)
        top = await self._reranker(s).rerank(searched, pool, k)
        log.debug(
            "retrieve.searched",
            k=k,
            collection=scope.collection,
            rewritten=searched != query,
            candidates=[len(r) for r in results],
            returned=len(top),
            seconds=round(time.monotonic() - started, 4),
        )
        return top

    async def retrieve(
        self, query: str, k: int, scope: Scope, switches: RetrievalSwitches | None = None
    ) -> list[Passage]:
        """The top ``k`` passages with citations (source, locator, chunk id), best first."""
        s = switches or self.switches
        hits = await self.search(query, k, scope, s)
        return [to_passage(hit, s.dual_storage) for hit in hits]
