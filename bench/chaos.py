"""Nothing lost under chaos: the chaos tier's driver with more runs, measured.

Starts the product on its own engines (Apache Kafka, a temporary data folder, every service
supervised), then: runs on every route from several WebSocket clients while a random service
is SIGKILLed every 4-8 s; a load during which each service is SIGKILLed in turn, each time
only after the previous victim has recovered (the recovery times reported); a load during
which each engine (Kafka, PostgreSQL, Redis, Milvus) is stopped and started; and the whole
stack stopped and started on its data, then a turn on every route. Writes
``bench/results/chaos.json``: the loss counts (all should be 0), restarts and restart
failures, recovery time (disruption → every run it caught answered) p50/p99 per victim
(overlapping kills apart, as `recovery_overlapping_kills`).

    .venv/bin/python bench/chaos.py [--runs 200] [--clients 6] [--rounds 3] [--engine-runs 24]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the chaos tier's driver

from turn_overhead import kafka_version, redis_version

from benchlib import pct, write_result
from tests.chaos.audit import Audit
from tests.chaos.disrupt import engine_outage, killer, one_at_a_time
from tests.chaos.driver import Plan
from tests.chaos.product import SHORT_DEADLINES, Product, load_and_audit, product
from weir_deploy.services import DEFAULT_SERVICES

ENGINES = ("kafka", "postgres", "redis", "milvus")
DEADLINES = ("STEP_TIMEOUT_S", "GENERATE_TIMEOUT_S", "TOOL_TIMEOUT_S")
TOTALS = ("runs", "completed", "lost_answers", "duplicate_answers", "broken_streams", "unaccepted",
          "duplicate_side_effects", "lost_turns", "duplicate_turns", "stuck_runs",
          "side_effects", "reconnects", "resumes")  # fmt: skip


async def phases(running: Product, args: argparse.Namespace) -> dict[str, Audit]:
    """Every disruption in turn, each on its own load; the audit of each."""
    audits: dict[str, Audit] = {}
    plan = Plan(runs=args.runs, clients=args.clients, prefix="mkill")
    _, audits["kill"] = await load_and_audit(
        running, plan, killer(running.services, DEFAULT_SERVICES)
    )
    plan = Plan(runs=2000, clients=4, prefix="mone", max_sending_s=1800.0)
    _, audits["one_at_a_time"] = await load_and_audit(
        running, plan, one_at_a_time(running.services, DEFAULT_SERVICES, rounds=args.rounds)
    )
    for engine in ENGINES:
        plan = Plan(runs=args.engine_runs, clients=4, prefix=f"m{engine}")
        _, audits[engine] = await load_and_audit(
            running, plan, engine_outage(running.stack, engine)
        )
    await running.restart_all()
    _, audits["stack"] = await load_and_audit(running, Plan(runs=4, clients=1, prefix="mstack"))
    return audits


def restart_failures(audits: dict[str, Audit]) -> dict[str, int]:
    """Per victim: disruptions it did not come back from, or after which a run failed."""
    failures: dict[str, int] = {}
    for name, audit in audits.items():
        for victim, count in audit.restart_failures.items():
            failures[victim] = failures.get(victim, 0) + count
        if name in (*ENGINES, "stack") and audit.completed < audit.runs:
            failures[name] = failures.get(name, 0) + 1
    failures.setdefault("stack", 0)
    return failures


def _per_victim(audits: dict[str, Audit], name: str) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {}
    for audit in audits.values():
        for victim, values in getattr(audit, name).items():
            seconds.setdefault(victim, []).extend(values)
    return seconds


def recovery(audits: dict[str, Audit]) -> dict[str, dict[str, Any]]:
    """Per victim: recovery seconds (disruption → every run it caught answered) p50/p99, the
    restart seconds (disruption → healthy again) p99, and the issue's goal: recovery p99
    under the longest step deadline plus the restart time."""
    restarts = _per_victim(audits, "restart_s")
    deadline = max(float(SHORT_DEADLINES[k]) for k in DEADLINES)
    out: dict[str, dict[str, Any]] = {}
    for victim, values in sorted(_per_victim(audits, "recovery_s").items()):
        restart = pct(restarts[victim], 99) if restarts.get(victim) else None
        goal = round(deadline + restart, 2) if restart is not None else None
        out[victim] = {
            "p50_s": pct(values, 50),
            "p99_s": pct(values, 99),
            "n": len(values),
            "restart_p99_s": restart,
            "goal_s": goal,
            "within_goal": goal is not None and pct(values, 99) <= goal,
        }
    return out


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Run every phase and summarise."""
    began = time.monotonic()
    async with product() as running:
        await running.upload_doc()
        audits = await phases(running, args)
        restarts = dict(running.services.restarts)
        engine = {
            "kafka_impl": "apache",
            "kafka_version": kafka_version("apache"),
            "redis": await redis_version(running.stack.env()["REDIS_URL"]),
            "milvus_lite": importlib.metadata.version("milvus-lite"),
            "mcp_sdk": importlib.metadata.version("mcp"),
            "stack_restart_s": running.restarts.get("stack"),
        }
    totals = {key: sum(getattr(a, key) for a in audits.values()) for key in TOTALS}
    return {
        **totals,
        "restarts": {**restarts, **dict.fromkeys(ENGINES, 1), "stack": 1},
        "restart_failures": restart_failures(audits),
        "recovery": recovery({k: a for k, a in audits.items() if k != "kill"}),
        "recovery_overlapping_kills": recovery({"kill": audits["kill"]}),
        "phases": {name: asdict(audit) for name, audit in audits.items()},
        "settings": {
            "runs": args.runs,
            "clients": args.clients,
            "engine_runs": args.engine_runs,
            "deadlines": SHORT_DEADLINES,
        },
        "engine": engine,
        "seconds": round(time.monotonic() - began, 1),
    }


def main() -> None:
    """Parse flags, run the benchmark, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200, help="Runs of the killer phase.")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3, help="Kills per service, one at a time.")
    parser.add_argument("--engine-runs", type=int, default=24, help="Runs per engine restart.")
    result = asyncio.run(bench(parser.parse_args()))
    out = write_result("chaos", result)
    losses = {k: result[k] for k in TOTALS if k not in ("side_effects", "reconnects", "resumes")}
    print(f"{out}: {losses}\nrestart failures {result['restart_failures']}")
    for victim, figures in result["recovery"].items():
        print(
            f"  {victim:<10} recovery p50 {figures['p50_s']} s, p99 {figures['p99_s']} s "
            f"(restart p99 {figures['restart_p99_s']} s, goal {figures['goal_s']} s)"
        )


if __name__ == "__main__":
    main()
