"""Retrieval evaluation: a corpus and qrels in, recall@5/@10 and nDCG@10 out, per switch set."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weir_common.embeddings import Embedder
from weir_common.search.documents import Chunk, Scope
from weir_common.search.lexical import LexicalIndex
from weir_rag.index.dense import DenseIndex
from weir_rag.retrieve.metrics import mean, ndcg_at, recall_at
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.retrieve.switches import RetrievalSwitches


@dataclass(frozen=True, slots=True)
class EvalDoc:
    """One corpus entry (indexed as a one-chunk document)."""

    id: str
    text: str
    collection: str = "default"
    source: str = ""

    def chunk(self) -> Chunk:
        """The document as a chunk; its id doubles as document id and default source."""
        return Chunk(
            chunk_id=self.id,
            document_id=self.id,
            source=self.source or self.id,
            collection=self.collection,
            owner=None,
            semantic_text=self.text,
            raw_content=self.text,
        )


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """A question, the ids of its relevant documents and where to search."""

    id: str
    text: str
    relevant: frozenset[str]
    collection: str = "default"
    category: str = ""


@dataclass
class Scores:
    """Per-query metric values, grouped by category."""

    rows: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: str, values: dict[str, float]) -> None:
        """Record one query's metrics."""
        self.rows[category].append(values)

    def summary(self) -> dict[str, Any]:
        """Means overall and per category (with query counts)."""
        every = [v for rows in self.rows.values() for v in rows]

        def means(rows: list[dict[str, float]]) -> dict[str, float]:
            return {m: round(mean([r[m] for r in rows]), 4) for m in rows[0]} if rows else {}

        return {
            "overall": means(every) | {"queries": len(every)},
            "by_category": {
                c: means(r) | {"queries": len(r)} for c, r in sorted(self.rows.items())
            },
        }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Objects of a JSON-lines file (blank lines skipped)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_corpus(path: Path) -> list[EvalDoc]:
    """``{"id", "text", "collection"?, "source"?}`` per line."""
    return [
        EvalDoc(str(r["id"]), r["text"], r.get("collection", "default"), r.get("source", ""))
        for r in read_jsonl(path)
    ]


def load_qrels(path: Path) -> list[EvalQuery]:
    """``{"id", "query", "relevant": [...], "collection"?, "category"?}`` per line."""
    return [
        EvalQuery(
            str(r["id"]),
            r["query"],
            frozenset(map(str, r["relevant"])),
            r.get("collection", "default"),
            str(r.get("category", "")),
        )
        for r in read_jsonl(path)
    ]


async def index_corpus(
    docs: Sequence[EvalDoc],
    embedder: Embedder,
    dense: DenseIndex | None,
    lexical: LexicalIndex | None,
    batch: int = 256,
) -> None:
    """Embed and index every document (dense and/or lexical), ``batch`` at a time."""
    for start in range(0, len(docs), batch):
        chunks = [d.chunk() for d in docs[start : start + batch]]
        if dense is not None:
            vectors = await embedder.embed_documents([c.semantic_text for c in chunks])
            await dense.upsert(chunks, vectors)
        if lexical is not None:
            await lexical.upsert(chunks)


async def evaluate(
    retriever: Retriever, queries: Sequence[EvalQuery], switches: RetrievalSwitches
) -> dict[str, Any]:
    """recall@5, recall@10 and nDCG@10 (means overall and per category) for one switch set."""
    scores = Scores()
    for q in queries:
        hits = await retriever.search(q.text, 10, Scope(collection=q.collection), switches)
        ranked = [h.chunk.document_id for h in hits]
        scores.add(
            q.category,
            {
                "recall@5": recall_at(ranked, q.relevant, 5),
                "recall@10": recall_at(ranked, q.relevant, 10),
                "ndcg@10": ndcg_at(ranked, q.relevant, 10),
            },
        )
    return scores.summary()


def ablation_sets(with_llm: bool = False) -> dict[str, RetrievalSwitches]:
    """The default ablation matrix: each stage added (or removed) one at a time."""
    full = RetrievalSwitches()
    plain = full.with_(short_chunk_penalty=False, source_diversity=False)
    sets = {
        "dense only": plain.with_(lexical=False),
        "bm25 only": plain.with_(dense=False),
        "rrf": plain,
        "rrf + short-chunk penalty": plain.with_(short_chunk_penalty=True),
        "rrf + source diversity": plain.with_(source_diversity=True),
        "full (defaults)": full,
        "full + light rewrite": full.with_(query_rewrite="light"),
    }
    if with_llm:
        sets["full + llm rewrite"] = full.with_(query_rewrite="llm")
        sets["full + llm rerank"] = full.with_(rerank="llm")
    return sets


def format_matrix(results: Mapping[str, Mapping[str, Any]]) -> str:
    """A plain-text table: one row per switch set, overall metrics."""
    lines = [f"{'switch set':<32} {'R@5':>7} {'R@10':>7} {'nDCG@10':>8}"]
    for name, result in results.items():
        o = result["overall"]
        lines.append(
            f"{name:<32} {o['recall@5']:>7.3f} {o['recall@10']:>7.3f} {o['ndcg@10']:>8.3f}"
        )
    return "\n".join(lines)
