"""Long-term memory end to end: a fact told in one conversation reaches the model in a new
one, in Chinese and in English; private conversations and other users leave no trace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import httpx
import pytest

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import Person, messages_for, prompt_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

MEMORY_TABLES = ("memory_items", "memory_profile", "memory_chats", "memory_sessions")


async def wait_until_remembered(database_url: str, run_id: str) -> None:
    """Wait until the harness has recorded the turn in memory (that follows `done`)."""
    conn = await asyncpg.connect(database_url)
    try:
        for _ in range(150):
            status = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", run_id)
            if status not in (None, "running", "finishing"):
                assert status == "completed", status
                return
            await asyncio.sleep(0.1)
    finally:
        await conn.close()
    raise AssertionError(f"run {run_id} was not completed in time")


async def rows_about(database_url: str, user_id: str) -> dict[str, int]:
    """How many rows each memory table holds about a user."""
    conn = await asyncpg.connect(database_url)
    try:
        return {
            t: int(await conn.fetchval(f"SELECT count(*) FROM {t} WHERE user_id = $1", user_id))
            for t in MEMORY_TABLES
        }
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("tell", "ask", "expected"),
    [
        ("我叫小明，我喜欢打篮球", "我叫什么？我喜欢什么运动？", ("小明", "篮球", "【用户偏好】")),
        (
            "My name is Alice and I love playing basketball.",
            "What is my name? Which sport do I like?",
            ("Alice", "basketball", "[User preferences]"),
        ),
    ],
)
async def test_a_new_conversation_knows_what_an_earlier_one_told(
    person: Person,
    llm: ScriptedLLM,
    stack_env: dict[str, str],
    tell: str,
    ask: str,
    expected: tuple[str, str, str],
) -> None:
    told = await person.say(tell, conversation=f"first-{new_id()[:6]}")
    await wait_until_remembered(stack_env["DATABASE_URL"], told[0]["run_id"])

    await person.say(ask, conversation=f"second-{new_id()[:6]}")

    prompt = prompt_for(llm, ask)
    for needle in expected:  # the preference block of seed 000 reaches the model whole
        assert needle in prompt, prompt
    profile = await rows_about(stack_env["DATABASE_URL"], person.user_id)
    assert profile["memory_profile"] == 2, profile
    assert profile["memory_items"] == 1, profile


async def test_a_private_conversation_leaves_no_long_term_rows(
    person: Person, llm: ScriptedLLM, stack_env: dict[str, str]
) -> None:
    frames = await person.say("我叫小红，我喜欢游泳", conversation="secret", private=True)
    await wait_until_remembered(stack_env["DATABASE_URL"], frames[0]["run_id"])
    follow = await person.say("我喜欢什么？", conversation="secret", private=True)
    await wait_until_remembered(stack_env["DATABASE_URL"], follow[0]["run_id"])

    assert await rows_about(stack_env["DATABASE_URL"], person.user_id) == dict.fromkeys(
        MEMORY_TABLES, 0
    )
    # short-term memory still holds the private conversation itself
    seen = json.dumps(messages_for(llm, "我喜欢什么？"), ensure_ascii=False)
    assert "我叫小红，我喜欢游泳" in seen


async def test_one_users_memories_never_reach_another(
    product: Services, llm: ScriptedLLM, stack_env: dict[str, str]
) -> None:
    alice, bob = Person(product, f"a-{new_id()[:8]}"), Person(product, f"b-{new_id()[:8]}")
    told = await alice.say("我叫阿丽，我喜欢弹钢琴", conversation="mine")
    await wait_until_remembered(stack_env["DATABASE_URL"], told[0]["run_id"])

    question = f"我叫什么？我喜欢什么乐器？{new_id()[:4]}"
    await bob.say(question, conversation="mine")

    prompt = prompt_for(llm, question)
    assert "阿丽" not in prompt, prompt
    assert "钢琴" not in prompt, prompt
    assert (await rows_about(stack_env["DATABASE_URL"], bob.user_id))["memory_profile"] == 0


def _after_last_reset(frames: list[dict[str, Any]]) -> str:
    resets = [i for i, f in enumerate(frames) if f["type"] == "reset"]
    start = resets[-1] + 1 if resets else 0
    return "".join(str(f["text"]) for f in frames[start:] if f["type"] == "delta")


async def test_an_answer_contradicting_a_stored_preference_is_regenerated(
    person: Person, llm: ScriptedLLM, stack_env: dict[str, str]
) -> None:
    """The evaluator (F39): the first answer suggests coffee to a user who dislikes it, so it
    is regenerated with the reason and the client sees a `reset`."""
    told = await person.say("I don't like coffee.", conversation=f"tell-{new_id()[:6]}")
    await wait_until_remembered(stack_env["DATABASE_URL"], told[0]["run_id"])
    llm.set_script(
        [
            ScriptRule(match="drink this morning", text="Have a strong coffee.", once=True),
            ScriptRule(match="drink this morning", text="Try a green tea."),
        ]
    )
    frames = await person.say("What should I drink this morning?", f"ask-{new_id()[:6]}")
    assert any(f["type"] == "reset" for f in frames), frames
    assert _after_last_reset(frames) == "Try a green tea."
    assert "coffee" in prompt_for(llm, "What should I drink this morning?")


async def test_the_last_failing_answer_is_delivered_and_marked(
    person: Person, llm: ScriptedLLM, stack_env: dict[str, str], product: Services
) -> None:
    """Every regeneration fails the check too: after the seed's three retries the last
    answer is delivered, each failed check is a step of the run record, and the verdict
    says the answer failed the evaluator."""
    told = await person.say("I don't like coffee.", conversation=f"tell-{new_id()[:6]}")
    await wait_until_remembered(stack_env["DATABASE_URL"], told[0]["run_id"])
    llm.set_script([ScriptRule(match="drink tonight", text="Have a coffee.")])
    frames = await person.say("What should I drink tonight?", f"ask-{new_id()[:6]}")
    assert sum(f["type"] == "reset" for f in frames) == 3, frames
    assert _after_last_reset(frames) == "Have a coffee."
    run_id = frames[0]["run_id"]
    await wait_until_remembered(stack_env["DATABASE_URL"], run_id)
    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        found = await http.get(f"/api/runs/{run_id}", headers={"X-User-Id": person.user_id})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["text"] == "Have a coffee."
    checks = [e for e in body["timeline"] if e["kind"] == "evaluator.failed"]
    assert len(checks) == 4, body["timeline"]
    assert all("coffee" in e["detail"]["reason"] for e in checks), checks
    assert body["verdict"]["verdict"] == "partial", body["verdict"]
    assert any("evaluator" in e for e in body["verdict"]["evidence"]), body["verdict"]


async def test_the_model_judge_rejects_an_answer_and_the_regeneration_is_delivered(
    person: Person, llm: ScriptedLLM, stack_env: dict[str, str], product: Services
) -> None:
    """The model judge (F39): the first answer passes the offline rules, but the FLASH judge
    (the same scripted server) fails it; the answer is regenerated with the judge's reason,
    so the client sees a `reset`, and the judge passes the second answer."""
    tag = new_id()[:8]
    question = f"What should I name my cat? ({tag})"
    reason = "it suggests a dog's name for a cat"
    judge = rf"\[weir-judge\][\s\S]*{tag}"  # the judge's prompt, for this question only
    llm.set_script(
        [
            ScriptRule(match=judge, text=json.dumps({"pass": False, "reason": reason}), once=True),
            ScriptRule(match=judge, text='{"pass": true, "reason": "a fine cat name"}'),
            ScriptRule(match=tag, text="Call it Rex.", once=True),
            ScriptRule(match=tag, text="Call it Miso."),
        ]
    )
    frames = await person.say(question, f"cat-{tag}")
    assert sum(f["type"] == "reset" for f in frames) == 1, frames
    assert _after_last_reset(frames) == "Call it Miso."
    assert frames[-1]["type"] == "done"
    assert reason in prompt_for(llm, question)  # the regeneration's revision note
    judged = [b for b in llm.requests if "[weir-judge]" in str(b["messages"][-1]["content"])]
    assert len([b for b in judged if tag in str(b["messages"][-1]["content"])]) == 2
    run_id = frames[0]["run_id"]
    await wait_until_remembered(stack_env["DATABASE_URL"], run_id)
    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        found = await http.get(f"/api/runs/{run_id}", headers={"X-User-Id": person.user_id})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["text"] == "Call it Miso."
    checks = [e["detail"] for e in body["timeline"] if e["kind"] == "evaluator.failed"]
    assert checks == [{"reason": reason, "check": 1, "by": "judge"}], body["timeline"]
    verdict = body["verdict"]
    assert not any("evaluator" in e for e in verdict["evidence"]), verdict  # passed in the end
