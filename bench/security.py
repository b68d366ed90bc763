"""The isolation matrix against the whole product, in each identity mode.

Starts an ephemeral `Stack` (Kafka, PostgreSQL, Redis, Milvus Lite), an in-process scripted
model and every service, with three gateways on the same backend: the main one in `proxy`
mode (trusting loopback), a second in `token` mode (HS256 JWTs and static tokens), a third
in `local` mode on loopback. Runs `tests/security/matrix.py` against each (small limits, so
the floods are cheap) and writes ``bench/results/security.json``.

    .venv/bin/python bench/security.py
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import secrets
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the matrix lives in tests/

import asyncpg
from turn_overhead import kafka_version, redis_version

from benchlib import write_result
from tests.security.matrix import (
    SMALL_LIMITS,
    Gateway,
    Matrix,
    Outcome,
    local_gateway,
    proxy_gateway,
    summary,
    token_env,
    token_gateway,
)
from weir_common.events import new_id
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services
from weir_deploy.stack import ALL_ENGINES, Stack

INTERNAL = ("harness", "memory", "rag", "tools")


def gateway_only(main: Services, name: str, extra: dict[str, str]) -> Services:
    """One more gateway of the same product (its own instance id and reply topic)."""
    env = {k: v for k, v in main.base_env.items() if k.isupper() and not k.startswith("AUTH_")}
    return Services(
        env,
        Path(tempfile.mkdtemp(prefix=f"weir-bench-security-{name}-")),
        names=["gateway"],
        gateway_port=free_port(),
        extra_env={"INSTANCE_ID": f"{name}-{new_id()[:6]}", **extra},
    )


async def postgres_version(url: str) -> str:
    """`server_version` of PostgreSQL."""
    conn = await asyncpg.connect(url)
    try:
        return str(await conn.fetchval("SHOW server_version"))
    finally:
        await conn.close()


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


async def run_matrix(
    gateway: Gateway, services: list[Services], llm: ScriptedLLM, main: Services,
    foreign: list[str], user_ids: dict[str, str] | None = None,
) -> tuple[list[Outcome], list[str], float]:  # fmt: skip
    """One mode's matrix; its outcomes, its users' secrets and how long it took."""
    began = time.monotonic()
    internal = {name: main.url(name) for name in INTERNAL}
    matrix = Matrix(gateway, services, llm, internal=internal, foreign=foreign, user_ids=user_ids)
    outcomes = await matrix.run()
    print(f"  {gateway.mode}: {len(outcomes)} cases in {time.monotonic() - began:.0f} s")
    return outcomes, matrix.secrets, round(time.monotonic() - began, 1)


async def bench() -> dict[str, Any]:
    """Start everything, run the matrix in the three modes, stop everything."""
    limits = SMALL_LIMITS.env()
    async with (
        Stack(ALL_ENGINES, ephemeral=True) as stack,
        ScriptedLLM() as llm,
    ):
        env = stack.services_env()
        main = Services(
            env,
            Path(tempfile.mkdtemp(prefix="weir-bench-security-")),
            gateway_port=free_port(),
            extra_env={
                **LOOPBACK_PROXY_AUTH,
                **limits,
                "TOPIC_PREFIX": f"bench{new_id()[:8]}.",
                "LLM_MODEL": "openai/scripted",
                "LLM_API_BASE": llm.base_url,
                "LLM_API_KEY": "sk-scripted",
                "BACKOFF_BASE_S": "0.2",
            },
        )
        async with main:
            static = {f"bob-static-{secrets.token_hex(3)}": f"st-{secrets.token_hex(16)}"}
            local_user = f"local-{secrets.token_hex(3)}"
            token = gateway_only(main, "tok", {**token_env(static), **limits})
            local = gateway_only(
                main, "local", {"AUTH_MODE": "local", "LOCAL_USER": local_user, **limits}
            )
            async with token, local:
                all_services = [main, token, local]
                outcomes: dict[str, list[Outcome]] = {}
                seconds: dict[str, float] = {}
                proxy = proxy_gateway(main.url("gateway"), SMALL_LIMITS)
                outcomes["proxy"], seen, seconds["proxy"] = await run_matrix(
                    proxy, all_services, llm, main, []
                )
                tok = token_gateway(token.url("gateway"), static, main.service_token, SMALL_LIMITS)
                outcomes["token"], more, seconds["token"] = await run_matrix(
                    tok, all_services, llm, main, seen, {"B": next(iter(static))}
                )
                loc = local_gateway(local.url("gateway"), local_user, SMALL_LIMITS)
                outcomes["local"], _, seconds["local"] = await run_matrix(
                    loc, all_services, llm, main, [*seen, *more]
                )
                died = sorted({name for s in all_services for name in s.exited()})
        engine = {
            "kafka_impl": "apache",
            "kafka_version": kafka_version("apache"),
            "redis": await redis_version(env["REDIS_URL"]),
            "postgres": await postgres_version(env["DATABASE_URL"]),
            "milvus_lite": _package_version("milvus-lite"),
            "engines": list(ALL_ENGINES),
        }
    every = [o for mode in outcomes.values() for o in mode]
    result = summary(every)
    return {
        **result,
        "modes": {
            mode: {
                "cases": len(found),
                "leaks": sum(o.leak for o in found),
                "crashes": sum(o.crash for o in found),
                "hangs": sum(o.hang for o in found),
                "mismatches": sum(o.mismatch for o in found),
                "seconds": seconds[mode],
                "groups": dict(Counter(o.group for o in found)),
            }
            for mode, found in outcomes.items()
        },
        "mode": ["proxy", "token", "local"],
        "services_died": died,
        "limits": limits,
        "engine": engine,
        "all_cases": [o.as_dict() for o in every],
    }


def main() -> None:
    """Run the benchmark, write and summarise the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    result = asyncio.run(bench())
    out = write_result("security", result)
    print(
        f"\n{result['cases']} cases: {result['leaks']} leaks, {result['crashes']} crashes, "
        f"{result['hangs']} hangs, {len(result['mismatches'])} mismatches\n"
        + "".join(
            f"  {m['mode']} {m['target']} as {m['caller']} ({m['name']}): "
            f"expected {m['expected']}, got {m['got']}\n"
            for m in result["mismatches"]
        )
        + f"  written to {out}"
    )


if __name__ == "__main__":
    main()
