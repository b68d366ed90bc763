"""What a tool call costs through the tools service, versus calling the MCP server directly.

Starts Kafka and Redis (ephemeral) and the tools service as its own process, with
server-everything over stdio as its only MCP server. Then, one call at a time:
1. direct: `echo` on a server-everything session of this process (the MCP SDK, stdio);
2. http: `POST /internal/call` on the service (its own work, no Kafka);
3. kafka: publish `tools.call.requested`, wait for the matching `tools.call.completed`;
and a raw produce→consume round trip on the same broker. Writes
``bench/results/tool_overhead.json`` (``tool_overhead_tansu.json`` on tansu).

    .venv/bin/python bench/tool_overhead.py [--calls 500] [--kafka-impl apache|tansu]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mcp import ClientSession, StdioServerParameters, stdio_client
from turn_overhead import kafka_version, raw_round_trip, redis_version

from benchlib import pct, write_result
from weir_common.events import ToolCallItem, ToolsCallRequested, new_id
from weir_deploy.services import Services
from weir_deploy.stack import Stack

PEERS = Path(__file__).resolve().parents[1] / "deploy/peers/node_modules/@modelcontextprotocol"
EVERYTHING = PEERS / "server-everything/dist/index.js"
WARMUP = 20
CALL_TIMEOUT_S = 30.0

Call = Callable[[int], Awaitable[float]]


async def measure(call: Call, calls: int) -> list[float]:
    """Warm up, then `calls` sequential calls; milliseconds each."""
    for i in range(WARMUP):
        await call(-1 - i)
    return [await call(i) for i in range(calls)]


def summary(name: str, ms: list[float]) -> dict[str, float]:
    """p50, p99 and mean of one path."""
    return {
        f"{name}_p50_ms": pct(ms, 50),
        f"{name}_p99_ms": pct(ms, 99),
        f"{name}_mean_ms": round(statistics.fmean(ms), 2),
    }


async def direct(calls: int) -> list[float]:
    """`echo` on a server-everything stdio session of our own."""
    params = StdioServerParameters(command="node", args=[str(EVERYTHING), "stdio"])
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        await session.initialize()

        async def call(i: int) -> float:
            began = time.perf_counter()
            result = await session.call_tool("echo", {"message": f"m{i}"}, CALL_TIMEOUT_S)
            elapsed = (time.perf_counter() - began) * 1000
            assert not result.is_error, result
            return elapsed

        return await measure(call, calls)


async def over_http(base_url: str, headers: dict[str, str], calls: int) -> list[float]:
    """`POST /internal/call` on the tools service (with the service credential `headers`),
    each with its own idempotency key."""
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=CALL_TIMEOUT_S
    ) as client:

        async def call(i: int) -> float:
            body = {"tool": "echo", "arguments": {"message": f"m{i}"}, "idempotency_key": new_id()}
            began = time.perf_counter()
            response = await client.post("/internal/call", json=body)
            elapsed = (time.perf_counter() - began) * 1000
            assert response.json()["content"] == f"Echo: m{i}", response.text
            return elapsed

        return await measure(call, calls)


async def over_kafka(
    env: dict[str, str], prefix: str, calls: int
) -> tuple[list[float], list[float]]:
    """tools.call.requested → tools.call.completed; also the service-measured call time.

    The consumer's fetch wait is the one the stack gives the services (tansu does not wake a
    multi-partition fetch when data arrives, so it needs a short one).
    """
    bootstrap = env["KAFKA_BOOTSTRAP_SERVERS"]
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=0, enable_idempotence=False
    )
    consumer = AIOKafkaConsumer(
        f"{prefix}tools.call.completed",
        bootstrap_servers=bootstrap,
        group_id=f"bench-{new_id()[:8]}",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=int(env.get("KAFKA_FETCH_MAX_WAIT_MS", "500")),
    )
    inside: list[float] = []
    await producer.start()
    await consumer.start()
    try:
        # a new group reads from the earliest offset, so the warm-up calls absorb its join

        async def call(i: int) -> float:
            item = ToolCallItem(tool="echo", arguments={"message": f"m{i}"},
                                idempotency_key=new_id())  # fmt: skip
            cmd = ToolsCallRequested(run_id=new_id(), calls=[item], timeout_s=CALL_TIMEOUT_S)
            began = time.perf_counter()
            await producer.send_and_wait(
                f"{prefix}tools.call.requested",
                json.dumps(cmd.model_dump(mode="json")).encode(),
                key=(cmd.run_id or "").encode(),
            )
            async with asyncio.timeout(CALL_TIMEOUT_S):
                while (done := json.loads((await consumer.getone()).value))[
                    "request_id"
                ] != cmd.event_id:
                    pass
            elapsed = (time.perf_counter() - began) * 1000
            result = done["results"][0]
            assert result["content"] == f"Echo: m{i}", done
            if i >= 0:
                inside.append(result["duration_ms"])
            return elapsed

        return await measure(call, calls), inside
    finally:
        await consumer.stop()
        await producer.stop()


def node_version() -> str:
    """`node --version`."""
    out = subprocess.run(["node", "--version"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


async def bench(calls: int, impl: str) -> dict[str, Any]:
    """Start everything, measure the three paths, stop everything (also on error)."""
    if not EVERYTHING.is_file():
        raise SystemExit(f"{EVERYTHING} missing: npm ci --prefix deploy/peers")
    prefix = f"bench{new_id()[:8]}."
    server = {"name": "everything", "command": "node", "args": [str(EVERYTHING), "stdio"]}
    async with Stack(("kafka", "redis"), ephemeral=True, kafka_impl=impl) as stack:
        env = stack.env()
        logs = Path(tempfile.mkdtemp(prefix="weir-bench-logs-"))
        extra = {"TOPIC_PREFIX": prefix, "MCP_SERVERS": json.dumps([server])}
        async with Services(env, logs, names=("tools",), extra_env=extra) as services:
            direct_ms = await direct(calls)
            http_ms = await over_http(services.url("tools"), services.headers(), calls)
            kafka_ms, inside_ms = await over_kafka(env, prefix, calls)
            if services.exited():
                raise RuntimeError(f"tools service died (logs in {logs})")
        raw = await raw_round_trip(env["KAFKA_BOOTSTRAP_SERVERS"])
        engine = {
            "kafka_impl": impl,
            "kafka_version": kafka_version(impl),
            "redis": await redis_version(env["REDIS_URL"]),
            "result_store": "redis",
            "mcp_server": "@modelcontextprotocol/server-everything "
            + json.loads((EVERYTHING.parents[1] / "package.json").read_text())["version"],
            "mcp_transport": "stdio",
            "node": node_version(),
            "mcp_sdk": importlib.metadata.version("mcp"),
        }
    kafka = summary("kafka", kafka_ms)
    return {
        "calls": calls,
        "tool": "echo",
        **summary("direct", direct_ms),
        **summary("http", http_ms),
        **kafka,
        "service_call_p50_ms": pct(inside_ms, 50),
        **raw,
        "kafka_overhead_p50_ms": round(kafka["kafka_p50_ms"] - pct(direct_ms, 50), 2),
        "overhead_ratio": round(kafka["kafka_p50_ms"] / pct(direct_ms, 50), 2),
        "engine": engine,
        # other work on the machine moves the tails: say how busy it was
        "load_average_1m_5m_15m": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    """Parse flags, run the benchmark, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument(
        "--kafka-impl", choices=("apache", "tansu"), default=os.environ.get("KAFKA_IMPL", "apache")
    )
    args = parser.parse_args()
    result = asyncio.run(bench(args.calls, args.kafka_impl))
    suffix = "" if args.kafka_impl == "apache" else f"_{args.kafka_impl}"
    out = write_result(f"tool_overhead{suffix}", result)
    lines = [
        f"{result['calls']} echo calls on {args.kafka_impl} {result['engine']['kafka_version']}:",
        *(
            f"  {label:<20} p50 {result[f'{key}_p50_ms']} ms, p99 {result[f'{key}_p99_ms']} ms"
            for label, key in (
                ("direct MCP (stdio)", "direct"),
                ("service over HTTP", "http"),
                ("service over Kafka", "kafka"),
                ("raw Kafka RTT", "raw_rtt"),
            )
        ),
        f"  the call inside the service p50 {result['service_call_p50_ms']} ms",
        f"  written to {out}",
    ]
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
