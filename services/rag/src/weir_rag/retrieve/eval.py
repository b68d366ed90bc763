"""Ablation matrix from the command line (F14).

    MILVUS_URI=http://127.0.0.1:19530 python -m weir_rag.retrieve.eval \\
        --corpus corpus.jsonl --qrels qrels.jsonl [--lexical tantivy|elasticsearch]

Corpus lines: ``{"id", "text", "collection"?, "source"?}``; qrels lines: ``{"id", "query",
"relevant": [doc ids], "collection"?, "category"?}``. Needs a running Milvus (``python -m
weir_deploy up --engines milvus`` starts one) and, for ``--lexical elasticsearch``, ES_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

from weir_common.embeddings import make_embedder
from weir_common.llm import LLMSettings, make_llm_client
from weir_common.search.elastic import ElasticLexicalIndex
from weir_common.search.lexical import LexicalIndex
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_rag.index.dense import MilvusDenseIndex
from weir_rag.retrieve.evaluation import (
    ablation_sets,
    evaluate,
    format_matrix,
    index_corpus,
    load_corpus,
    load_qrels,
)
from weir_rag.retrieve.memo import CachingEmbedder
from weir_rag.retrieve.pipeline import Retriever


async def run(args: argparse.Namespace) -> int:
    """Index the corpus into fresh indexes, evaluate every switch set, print the matrix."""
    uri = os.environ.get("MILVUS_URI")
    if not uri:
        print("error: set MILVUS_URI (python -m weir_deploy up --engines milvus)", file=sys.stderr)
        return 2
    docs, queries = load_corpus(args.corpus), load_qrels(args.qrels)
    embedder = CachingEmbedder(make_embedder())
    dense = MilvusDenseIndex(uri, await embedder.probe(), collection=f"eval_{uuid.uuid4().hex}")
    lexical: LexicalIndex
    if args.lexical == "elasticsearch":
        lexical = ElasticLexicalIndex(os.environ["ES_URL"], prefix=f"eval-{uuid.uuid4().hex}-")
    else:
        lexical = TantivyLexicalIndex(Path(tempfile.mkdtemp(prefix="weir-eval-")))
    await dense.open()
    await lexical.open()
    try:
        await index_corpus(docs, embedder, dense, lexical)
        await dense.wait_indexed()
        settings = LLMSettings()
        llm = make_llm_client(settings) if settings.configured else None
        retriever = Retriever(embedder, dense, lexical, llm=llm)
        results = {
            name: await evaluate(retriever, queries, switches)
            for name, switches in ablation_sets(with_llm=llm is not None).items()
        }
    finally:
        await dense.close()
        await lexical.close()
    print(format_matrix(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m weir_rag.retrieve.eval", description=__doc__)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("--lexical", choices=("tantivy", "elasticsearch"), default="tantivy")
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
