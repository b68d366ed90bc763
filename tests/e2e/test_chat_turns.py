"""A chat turn end to end: WebSocket → gateway → Kafka → harness/memory/router → back."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import httpx
import pytest
import websockets
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from weir_common.testing.otlp_collector import OTLPCollector
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import ChatClient, messages_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

CONSUMER = 5  # OTLP SpanKind.SPAN_KIND_CONSUMER
SERVICES = {"weir-gateway", "weir-harness", "weir-router", "weir-memory"}


def _assembled(frames: list[dict[str, object]]) -> str:
    deltas = [f for f in frames if f["type"] == "delta"]
    assert [d["index"] for d in deltas] == list(range(len(deltas)))
    return "".join(str(d["text"]) for d in deltas)


async def _final_status(conn: asyncpg.Connection, run_id: str) -> str:
    """The run's status once memory has recorded its turn (that may follow `done`)."""
    for _ in range(100):
        status: str = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", run_id)
        if status not in ("running", "finishing"):
            return status
        await asyncio.sleep(0.1)
    return status


async def test_two_turns_stream_in_order_and_the_second_sees_the_first(
    chat: ChatClient, llm: ScriptedLLM, stack_env: dict[str, str], collector: OTLPCollector
) -> None:
    llm.set_script([ScriptRule(match="name", text="Your name is Ada, and you love basketball.")])
    first = await chat.turn("Hi, I am Ada and I love basketball", conversation_id="c1", id="m1")
    second = await chat.turn("What is my name?", conversation_id="c1", id="m2")

    for frames in (first, second):
        assert frames[0]["type"] == "accepted"
        done = frames[-1]
        assert done["type"] == "done", done
        assert _assembled(frames) == done["text"]
        assert done["offline"] is False
    assert second[-1]["text"] == "Your name is Ada, and you love basketball."
    assert second[-1]["id"] == "m2"
    seqs = [f["seq"] for f in chat.frames]
    assert seqs == list(range(len(seqs)))

    prompt = json.dumps(messages_for(llm, "What is my name?"))
    assert "I am Ada and I love basketball" in prompt

    runs = [first[0]["run_id"], second[0]["run_id"]]
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:
        for run_id in runs:
            status = await _final_status(conn, run_id)
            kinds = await conn.fetch(
                "SELECT kind, step FROM run_steps WHERE run_id = $1 ORDER BY seq", run_id
            )
            assert status == "completed"
            steps = [(k["kind"], k["step"]) for k in kinds]
            assert ("result", "answer.generate.requested") in steps
            assert ("result", "turn.completed") in steps
    finally:
        await conn.close()

    full = set()
    for _ in range(50):
        full = {t for t, names in collector.services_by_trace().items() if names >= SERVICES}
        if full:
            break
        await asyncio.sleep(0.2)
    assert full, collector.services_by_trace()
    back_at_gateway = [
        s
        for s in collector.spans
        if s.trace_id in full and s.service == "weir-gateway" and s.kind == CONSUMER
    ]
    assert back_at_gateway, "the trace does not come back to the gateway"


async def test_run_records_show_every_step(chat: ChatClient, product: Services) -> None:
    frames = await chat.turn("hello, record me")
    run_id = frames[0]["run_id"]
    harness = product.url("harness")
    async with httpx.AsyncClient(base_url=harness, headers=product.headers()) as http:
        for _ in range(50):
            record = (await http.get(f"/runs/{run_id}")).json()
            if record["run"]["status"] == "completed":
                break
            await asyncio.sleep(0.1)
        missing = await http.get("/runs/no-such-run")
    assert record["run"]["state"]["answer"] == frames[-1]["text"]
    kinds = [(s["kind"], s["step"]) for s in record["steps"]]
    assert kinds[0] == ("request", "chat.requested")
    assert ("result", "route.requested") in kinds
    assert missing.status_code == 404


async def test_a_transient_model_failure_is_retried_by_the_harness(
    chat: ChatClient, llm: ScriptedLLM, stack_env: dict[str, str]
) -> None:
    llm.set_script([ScriptRule(match="flaky", text="Recovered answer.", fail_times=1, status=503)])
    frames = await chat.turn("a flaky question")
    assert frames[-1]["type"] == "done"
    assert frames[-1]["text"] == "Recovered answer."
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:
        attempts = await conn.fetch(
            "SELECT attempt, kind FROM run_steps WHERE run_id = $1 AND step = $2 ORDER BY seq",
            frames[0]["run_id"],
            "answer.generate.requested",
        )
    finally:
        await conn.close()
    assert [(a["attempt"], a["kind"]) for a in attempts] == [
        (1, "command"),
        (1, "result"),
        (2, "command"),
        (2, "result"),
    ]


async def test_poison_event_goes_to_the_dead_letter_topic_and_the_next_is_processed(
    chat: ChatClient, product: Services, stack_env: dict[str, str], topic_prefix: str
) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    topic = f"{topic_prefix}chat.requested"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"\x00 definitely not an event")
    finally:
        await producer.stop()

    frames = await chat.turn("hello after the poison")
    assert frames[-1]["type"] == "done"

    consumer = AIOKafkaConsumer(
        f"{topic}.dlq", bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=10_000)
        records = [r for rs in batch.values() for r in rs]
    finally:
        await consumer.stop()
    poisoned = [r for r in records if r.value == b"\x00 definitely not an event"]
    assert poisoned, records
    headers = dict(poisoned[0].headers)
    assert headers["x-dlq-reason"] == b"invalid_event"
    assert headers["x-dlq-topic"] == topic.encode()
    assert not product.exited()


async def test_bad_frames_get_error_frames_and_the_connection_stays_open(chat: ChatClient) -> None:
    await chat.send("{not json")
    assert (await chat.recv())["code"] == "bad_json"
    await chat.send({"type": "teleport"})
    assert (await chat.recv())["code"] == "unknown_type"
    await chat.send({"type": "chat", "text": ""})
    assert (await chat.recv())["code"] == "invalid"
    await chat.send({"type": "chat", "text": "x" * 9_000})  # over MAX_MESSAGE_CHARS
    assert (await chat.recv())["code"] == "too_large"
    await chat.send({"type": "ping"})
    assert (await chat.recv())["type"] == "pong"
    frames = await chat.turn("still here?")
    assert frames[-1]["type"] == "done"


async def test_a_frame_over_the_frame_limit_closes_the_socket_with_1009(chat: ChatClient) -> None:
    """The transport refuses it (uvicorn's `ws_max_size` is `MAX_FRAME_BYTES`): the
    gateway never buffers more than one frame's limit."""
    await chat.send({"type": "chat", "text": "x" * 70_000})
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await chat.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009


async def test_http_chat_streams_server_sent_events(product: Services, llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(match="SSE", text="Streaming over SSE works fine.")])
    events: list[tuple[str, dict[str, object]]] = []
    async with (
        httpx.AsyncClient(base_url=product.url("gateway"), timeout=30) as http,
        http.stream(
            "POST", "/api/chat", json={"message": "SSE please"}, headers={"X-User-Id": "sse"}
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        event = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((event, json.loads(line.removeprefix("data: "))))
    names = [name for name, _ in events]
    assert names[0] == "conversation_id"
    assert names[-1] == "done"
    text = "".join(str(data["content"]) for name, data in events if name == "text")
    assert text == "Streaming over SSE works fine."
