"""Load benchmark: many WebSocket chat clients through the whole product, on real processes.

Starts the engines (Kafka — Apache or tansu —, PostgreSQL, Redis, Milvus Lite; ephemeral),
an in-process scripted model reached through litellm (`openai/scripted`, ~20 streamed
tokens) and the six services, each its own process, as `make run` does. Then:
1. idle: CPU of every process over `--idle-seconds` with no traffic, after start-up settles;
2. load: `--clients` users, each its own conversation, `--turns` turns each through the
   gateway's `/ws/chat` (next turn after the previous `done`; `--workload chat`, the
   default, small talk that takes the plain-chat route, `knowledge`, a message the rules
   read as a question, searched in the empty knowledge base, or `returning`, the small talk
   with each turn in a new conversation, so memory recalls every turn after the first):
   turns/s, latency p50/p99,
   first-delta time over the model's own, errors, CPU ms per turn of every process tree
   (from /proc); with `--profile DIR`, py-spy on each service during the load;
3. or, with `--soak[-minutes N]`, the same clients chatting without pause for N minutes:
   per minute turns/s, latency and RSS of every process; unanswered turns; RSS growth.
Writes ``bench/results/load.json`` (idle + load), ``load_soak.json`` (soak) or
``load_profiled.json`` (a load under py-spy), with the workload's name after it when it is
not `chat` and a ``_tansu`` suffix on tansu; the keys are in bench/README.md.

    .venv/bin/python bench/load.py [--clients 200] [--turns 5] [--kafka-impl apache|tansu]
        [--idle-seconds 30] [--profile DIR] [--soak | --soak-minutes N]
        [--workload chat|knowledge|returning]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
from gc_scrape import gc_ms_per_turn, gc_seconds
from load_clients import MESSAGES, Client, Turn, chat, connect_all
from load_report import direct_ttft_ms, idle_report, load_report, model_calls, soak_report
from procstat import Usage, loadavg, usage
from pyspy_profile import Profiler
from turn_overhead import kafka_version

from benchlib import write_result
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services
from weir_deploy.stack import ALL_ENGINES, Stack
from weir_memory.settings import MemorySettings

REPLY = (
    "fine thanks, and you? it is a quiet day here, nothing much to report, "
    "all is well on my side."
)  # 20 words, streamed one word per chunk
WARM_CLIENTS = 10
WARM_TURNS = 2
SINGLE_TURNS = 10


def roots_of(stack: Stack, services: Services) -> dict[str, int]:
    """The root pid of every service and engine (the process trees that are measured)."""
    roots: dict[str, int] = {}
    for name in services.names:
        pid = services.pid(name)
        if pid is None:
            raise RuntimeError(f"service {name} is not running")
        roots[name] = pid
    for engine in stack.engines:
        proc = engine._proc  # type: ignore[attr-defined]  # the leader pid
        if proc is None or proc.pid is None:
            raise RuntimeError(f"engine {engine.name} has no process")
        roots[engine.name] = int(proc.pid)
    return roots


def reading(roots: dict[str, int], *, pss: bool = False) -> tuple[Usage, float]:
    """Every tree's usage now, and this process's own CPU seconds (clients + model)."""
    times = os.times()
    return usage(roots, time.monotonic(), pss=pss), times.user + times.system


async def idle(roots: dict[str, int], seconds: float) -> dict[str, Any]:
    """CPU of the whole stack over `seconds` with no traffic."""
    before, _ = reading(roots)
    await asyncio.sleep(seconds)
    after, _ = reading(roots)
    return idle_report(before, after)


async def single(url: str, direct_ms: float, workload: str) -> dict[str, Any]:
    """One client alone, `SINGLE_TURNS` turns: the path without any queue."""
    client = Client(url, -100, f"single-{os.getpid()}", workload)
    turns = await chat([client], SINGLE_TURNS, None)
    await client.close()
    answered = [t for t in turns if t.status == "done"]
    firsts = [1000 * t.first_delta_s for t in answered if t.first_delta_s is not None]
    if not answered or not firsts:
        return {"single_errors": len(turns) - len(answered)}
    ttft = round(statistics.median(firsts), 2)
    return {
        "single_p50_s": round(statistics.median(t.latency_s for t in answered), 3),
        "single_ttft_p50_ms": ttft,
        "single_ttft_added_p50_ms": round(ttft - direct_ms, 2),
        "single_errors": len(turns) - len(answered),
    }


async def load(
    url: str, roots: dict[str, int], args: argparse.Namespace, services: Services, llm: ScriptedLLM
) -> dict[str, Any]:
    """`--clients` × `--turns` turns; with `--profile`, py-spy on each service meanwhile."""
    clients = [
        Client(url, i, f"load-{os.getpid()}-{i}", args.workload) for i in range(args.clients)
    ]
    await connect_all(clients)
    profiler = None
    if args.profile is not None:
        profiler = Profiler(args.profile, {n: roots[n] for n in services.names})
        profiler.start()
        await asyncio.sleep(1.0)  # py-spy attaches
    load_before = loadavg()
    urls = {name: services.url(name) for name in services.names}
    gc_before = await gc_seconds(urls, services.service_token)
    try:
        before, own_before = reading(roots)
        turns = await chat(clients, args.turns, None)
        after, own_after = reading(roots)
    finally:
        if profiler is not None:
            profiler.stop()
    gc_after = await gc_seconds(urls, services.service_token)
    await asyncio.gather(*(c.close() for c in clients))
    report = load_report(turns, before, after, own_after - own_before)
    report["gc_ms_per_turn"] = gc_ms_per_turn(gc_before, gc_after, report["turns_answered"])
    if profiler is not None:
        seconds, answered = after.at - before.at, report["turns_answered"]
        for name, path in profiler.summarise(answered, seconds, report["cpu_ms_per_turn"]).items():
            print(f"profile of {name}: {path} (stacks: {profiler.path(name)})")
    report["model_calls_per_turn"] = model_calls(llm.recorded, report["turns_answered"])
    return {**report, "load_avg_before": load_before, "load_avg_after": loadavg()}


async def soak(
    url: str, roots: dict[str, int], args: argparse.Namespace, llm: ScriptedLLM
) -> dict[str, Any]:
    """The clients chat without pause for `minutes`; a reading of every tree each minute."""
    minutes, clients_n = args.soak_minutes, args.clients
    clients = [Client(url, i, f"soak-{os.getpid()}-{i}", args.workload) for i in range(clients_n)]
    await connect_all(clients)
    load_before = loadavg()
    began = time.monotonic()
    samples: list[Usage] = [reading(roots, pss=True)[0]]

    async def sampler() -> None:
        for minute in range(1, minutes + 1):
            await asyncio.sleep(max(0.0, began + 60 * minute - time.monotonic()))
            samples.append(reading(roots, pss=True)[0])
            llm.state.recorded.clear()  # the model keeps every request: not ours to grow
            done = [t for t in turns_so_far if t.status == "done"]
            print(f"  minute {minute}: {len(done)} turns answered so far, {loadavg()}")

    turns_so_far: list[Turn] = []
    sampling = asyncio.create_task(sampler())
    turns = await chat(clients, None, began + 60 * minutes, turns_so_far)
    await sampling
    await asyncio.gather(*(c.close() for c in clients))
    report = soak_report(turns, began, samples)
    return {**report, "load_avg_before": load_before, "load_avg_after": loadavg()}


async def routes_taken(dsn: str, who: str) -> dict[str, int]:
    """How many of the measured turns (users `<who>-…`) took each route, from the harness's
    run records: the workload's turns are meant to take one route all along."""
    db = await asyncpg.connect(dsn)
    try:
        rows = await db.fetch(
            "SELECT coalesce(state->>'route', 'none') AS route, count(*) AS n FROM runs"
            " WHERE user_id LIKE $1 GROUP BY 1 ORDER BY 2 DESC",
            f"{who}-%",
        )
    finally:
        await db.close()
    return {r["route"]: r["n"] for r in rows}


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Start everything, measure, stop everything (also on error)."""
    rule = ScriptRule(text=REPLY, chunk_words=1, token_delay_s=args.token_delay_s)
    async with (
        Stack(ALL_ENGINES, ephemeral=True, kafka_impl=args.kafka_impl) as stack,
        ScriptedLLM(rules=[rule]) as llm,
    ):
        logs = Path(tempfile.mkdtemp(prefix="weir-load-logs-"))
        extra = {
            **LOOPBACK_PROXY_AUTH,
            "RATE_LIMIT_CHAT": "1000000/minute",  # a quota would measure itself
            "LLM_MODEL": "openai/scripted",
            "LLM_API_BASE": llm.base_url,
            "LLM_API_KEY": "sk-scripted",
        }
        services = Services(stack.services_env(), logs, gateway_port=free_port(), extra_env=extra)
        async with services:
            roots = roots_of(stack, services)
            result: dict[str, Any] = {
                "kafka_impl": args.kafka_impl,
                "kafka_version": kafka_version(args.kafka_impl),
                "startup_s": {**stack.startup_seconds, **services.startup_seconds},
            }
            print(f"stack up ({result['startup_s']}); logs in {logs}; settling", flush=True)
            await asyncio.sleep(args.settle_seconds)
            if args.idle_seconds > 0:
                print(f"idle for {args.idle_seconds} s", flush=True)
                result.update(await idle(roots, args.idle_seconds))
            url = services.url("gateway").replace("http", "ws") + "/ws/chat"
            warm = [Client(url, -1 - i, f"warm-{os.getpid()}-{i}", args.workload)
                    for i in range(WARM_CLIENTS)]  # fmt: skip
            await connect_all(warm)
            warm_turns = await chat(warm, WARM_TURNS, None)
            await asyncio.gather(*(c.close() for c in warm))
            if bad := [t for t in warm_turns if t.status != "done"]:
                raise RuntimeError(f"warm-up turns failed: {bad[:3]} (logs in {logs})")
            direct = await direct_ttft_ms(llm.base_url)
            result["ttft_direct_p50_ms"] = round(statistics.median(direct), 2)
            result.update(await single(url, result["ttft_direct_p50_ms"], args.workload))
            llm.state.recorded.clear()
            if args.soak_minutes:
                print(f"soak: {args.clients} clients for {args.soak_minutes} min", flush=True)
                result.update(await soak(url, roots, args, llm))
            else:
                print(f"load: {args.clients} clients × {args.turns} turns", flush=True)
                result.update(await load(url, roots, args, services, llm))
                if "ttft_p50_ms" in result:
                    added = result["ttft_p50_ms"] - result["ttft_direct_p50_ms"]
                    result["ttft_added_p50_ms"] = round(added, 2)
            result["clients"] = args.clients
            result["workload"] = {"name": args.workload, "message": MESSAGES[args.workload]}
            who = "soak" if args.soak_minutes else "load"
            result["routes"] = await routes_taken(stack.services_env()["DATABASE_URL"], who)
            if args.idle_after_seconds > 0:
                await asyncio.sleep(5.0)  # the last runs close, memory's work drains
                print(f"idle after for {args.idle_after_seconds} s", flush=True)
                after = await idle(roots, args.idle_after_seconds)
                result.update({k.replace("idle_", "idle_after_", 1): v for k, v in after.items()})
            # the figures are kept, with the services that died on the way named
            result["services_exited"] = services.exited()
            result["logs"] = str(logs)
    return result


def main() -> None:
    """Parse flags, run, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5, help="turns per client")
    parser.add_argument(
        "--kafka-impl", choices=("apache", "tansu"), default=os.environ.get("KAFKA_IMPL", "apache")
    )
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="0: no idle reading")
    parser.add_argument(
        "--idle-after-seconds", type=float, default=0.0, help="an idle reading after the traffic"
    )
    parser.add_argument("--settle-seconds", type=float, default=10.0)
    parser.add_argument("--token-delay-s", type=float, default=0.0, help="model pause per token")
    parser.add_argument("--profile", type=Path, help="py-spy each service into this folder")
    parser.add_argument("--soak", action="store_true", help="soak for 10 minutes")
    parser.add_argument("--soak-minutes", type=int, default=0)
    parser.add_argument(
        "--workload", choices=sorted(MESSAGES), default="chat",
        help="chat: small talk (plain-chat turns); knowledge: the knowledge route; "
        "returning: small talk, each turn in a new conversation (memory recalls every turn)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.soak and not args.soak_minutes:
        args.soak_minutes = 10
    result = asyncio.run(bench(args))
    if not args.soak_minutes:
        result["turns"] = args.turns
    result["query_map"] = MemorySettings().query_map  # the services' (same environment)
    name = "load_soak" if args.soak_minutes else "load_profiled" if args.profile else "load"
    suffix = "" if args.workload == "chat" else f"_{args.workload}"
    suffix += "" if args.kafka_impl == "apache" else f"_{args.kafka_impl}"
    out = write_result(name + suffix, result)
    shown = {k: v for k, v in result.items() if not isinstance(v, dict | list)}
    print("\n".join(f"  {k}: {v}" for k, v in shown.items()))
    for key in ("cpu_ms_per_turn", "idle_cpu_percent_by_process", "soak_rss_growth_mb"):
        if key in result:
            print(f"  {key}: {result[key]}")
    print(f"written to {out}")
    if result["services_exited"]:
        raise SystemExit(f"services died during the run: {result['services_exited']}")


if __name__ == "__main__":
    main()
