"""The turn log end to end: a fact said once in passing, weeks earlier, in a turn no memory
was made of, reaches the model with its date when the user asks about it in a new
conversation. The old turns come in as an internal service publishes them (`turn.completed`
on Kafka, dated weeks back), so memory keeps the dates they were said on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer

from weir_common.events import TurnCompleted, new_id
from weir_common.testing.scripted_llm import ScriptedLLM

from .conftest import Person, prompt_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

PASSING = "ok cool, btw my sister Mia just moved to Lisbon, anyway, what is a good pasta recipe?"
FILLER = [
    ("What's the weather usually like in Porto in spring?", "Mild, around 18 degrees."),
    ("Can you explain what a monad is?", "A way to chain computations with context."),
    ("How long should I boil an egg?", "About seven minutes for a firm yolk."),
    ("Any tips for a job interview?", "Prepare examples and ask questions."),
]


def past_turns(user_id: str, start: datetime) -> list[TurnCompleted]:
    """Four conversations over two weeks, starting five weeks ago; the passing remark in the
    second."""
    said = [*FILLER[:2], (PASSING, "Try cacio e pepe."), *FILLER[2:]]
    return [
        TurnCompleted(
            user_text=text,
            assistant_text=reply,
            user_id=user_id,
            run_id=new_id(),
            conversation_id=f"past-{i}-{new_id()[:6]}",
            occurred_at=start + timedelta(days=3 * i),
        )
        for i, (text, reply) in enumerate(said)
    ]


async def publish(bootstrap: str, topic: str, turns: list[TurnCompleted]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for t in turns:
            await producer.send_and_wait(
                topic, t.model_dump_json().encode(), key=(t.run_id or "").encode(),
                headers=[("x-event-type", b"turn.completed")],
            )  # fmt: skip
    finally:
        await producer.stop()


async def wait_until_logged(database_url: str, user_id: str, n: int) -> None:
    """Wait until memory holds the user's `n` turns in the log, BM25 index included."""
    conn = await asyncpg.connect(database_url)
    try:
        for _ in range(300):
            indexed = await conn.fetchval(
                "SELECT count(*) FROM memory_chats WHERE user_id = $1 AND lexical_at IS NOT NULL",
                user_id,
            )
            if indexed >= n:
                return
            await asyncio.sleep(0.1)
    finally:
        await conn.close()
    raise AssertionError(f"{n} turns of {user_id} were not logged in time")


async def test_a_fact_said_once_in_passing_weeks_ago_reaches_the_model_with_its_date(
    person: Person, llm: ScriptedLLM, stack_env: dict[str, str], topic_prefix: str
) -> None:
    start = datetime.now(UTC) - timedelta(weeks=5)
    turns = past_turns(person.user_id, start)
    await publish(stack_env["KAFKA_BOOTSTRAP_SERVERS"], f"{topic_prefix}turn.completed", turns)
    await wait_until_logged(stack_env["DATABASE_URL"], person.user_id, len(turns))
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:  # the analyzer made no memory of the remark: only the log has it
        memories = await conn.fetch(
            "SELECT content FROM memory_items WHERE user_id = $1", person.user_id
        )
    finally:
        await conn.close()
    assert not any("Lisbon" in r["content"] for r in memories), memories

    ask = "Which city did my sister Mia move to?"
    await person.say(ask, conversation=f"now-{new_id()[:6]}")

    prompt = prompt_for(llm, ask)
    assert PASSING in prompt, prompt
    assert f"{turns[2].occurred_at.date().isoformat()}: {PASSING}" in prompt, prompt
