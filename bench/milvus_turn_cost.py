"""What memory's vector work costs Milvus Lite per chat turn, by how often it flushes.

Every turn, memory's vector index (`UserVectorIndex` over `MilvusVectorIndex`, the product's
own code) searches the user's memories and chats near the question (two searches) and, in
the background, writes the turn's chat vector (earlier versions also wrote its session's
vector, replaced on every turn and never searched). Milvus scans rows not flushed yet (its
growing segment) instead of its index, so the cost of a turn depends on how many written
rows wait for a flush. This bench runs `--turns`
such turns of `--users` users, in three phases, on a fresh collection for each `flush_every`,
and reads the Milvus server's CPU from /proc:

    .venv/bin/python bench/milvus_turn_cost.py [--turns 6000] [--users 200]
        [--flush-every 64 256 1024]

Writes ``bench/results/milvus_turn_cost.json``: per `flush_every`, the server's CPU ms per
turn in each phase (rows accumulate across phases) and the client's wall ms per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import numpy as np
from procstat import usage

from benchlib import write_result
from weir_deploy.stack import Stack
from weir_memory.longterm.vector_index import (
    MEMORY_KINDS,
    SCHEMA,
    UserVectorIndex,
    VectorRecord,
    sharing_searches,
)

DIMENSION = 384
PHASES = 3


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(DIMENSION)
    return [float(x) for x in v / np.linalg.norm(v)]


async def _turns(
    index: UserVectorIndex, rng: np.random.Generator, first: int, n: int, users: int
) -> None:
    for i in range(first, first + n):
        user = f"u{i % users}"
        query = _unit(rng)
        with sharing_searches():  # as the context path does
            await index.search(user, MEMORY_KINDS, query, 12)
            await index.search(user, ["chat"], query, 12)
        await index.upsert([VectorRecord(f"chat-{i}", user, "chat", _unit(rng), f"s-{user}")])


async def measure(stack: Stack, flush_every: int, turns: int, users: int) -> dict[str, Any]:
    """The phases of one run on a fresh collection flushed every `flush_every` rows."""
    milvus = stack.engine("milvus")
    pid = int(milvus._proc.pid)  # type: ignore[attr-defined]  # the engine's process
    index = UserVectorIndex.milvus(
        stack.env()["MILVUS_URI"], f"bench_flush_{flush_every}", flush_every=flush_every
    )
    await index.open(DIMENSION)
    rng = np.random.default_rng(7)
    phases = []
    per_phase = turns // PHASES
    try:
        for phase in range(PHASES):
            before, started = usage({"milvus": pid}, time.monotonic()), time.perf_counter()
            await _turns(index, rng, phase * per_phase, per_phase, users)
            after, wall = usage({"milvus": pid}, time.monotonic()), time.perf_counter() - started
            cpu_s = after.cpu_s["milvus"] - before.cpu_s["milvus"]
            phases.append({
                "turns_before": phase * per_phase,
                "server_cpu_ms_per_turn": round(1000 * cpu_s / per_phase, 2),
                "wall_ms_per_turn": round(1000 * wall / per_phase, 2),
            })  # fmt: skip
            print(f"flush_every {flush_every} phase {phase}: {phases[-1]}", flush=True)
    finally:
        await index.reset()
        await index.close()
    return {"flush_every": flush_every, "phases": phases}


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    async with Stack(("milvus",), ephemeral=True) as stack:
        runs = [await measure(stack, f, args.turns, args.users) for f in args.flush_every]
    return {
        "turns": args.turns,
        "users": args.users,
        "per_turn": "2 searches (memories, chats; limit 12) + 1 upsert of the chat's row",
        "shelves": "memories and chats in two collections (before: one, with sessions' rows)",
        "runs": runs,
        "engine": {
            "milvus": "Milvus Lite server",
            "index": "FLAT",
            "metric": SCHEMA.metric,
            "partitions_by_user": SCHEMA.partitions if SCHEMA.partition_by else 1,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--flush-every", type=int, nargs="+", default=[64, 256, 1024])
    args = parser.parse_args()
    result = asyncio.run(bench(args))
    print("written to", write_result("milvus_turn_cost", result))


if __name__ == "__main__":
    main()
