"""Start-up: a stopped engine ends the process with one line naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from weir_common.runtime import EngineUnavailableError, preflight
from weir_tools.__main__ import engine_checks
from weir_tools.settings import ToolsSettings

DEAD = "127.0.0.1:1"  # nothing listens on port 1


@pytest.mark.unit
def test_checks_name_each_engine_without_secrets() -> None:
    settings = ToolsSettings(kafka_bootstrap_servers=DEAD, redis_url=f"redis://:secret@{DEAD}/0")
    assert list(engine_checks(settings)) == [f"Kafka at {DEAD}", f"Redis at redis://:***@{DEAD}/0"]
    in_process = ToolsSettings(kafka_bootstrap_servers=DEAD, redis_url=None)
    assert list(engine_checks(in_process)) == [f"Kafka at {DEAD}"]


@pytest.mark.integration
async def test_stopped_redis_is_named(stack_env: dict[str, str]) -> None:
    checks = engine_checks(ToolsSettings(redis_url=f"redis://{DEAD}/0"))
    with pytest.raises(EngineUnavailableError, match=f"^Redis at redis://{DEAD}/0 is not"):
        await preflight({k: v for k, v in checks.items() if k.startswith("Redis")})
    live = engine_checks(ToolsSettings(redis_url=stack_env["REDIS_URL"]))
    await preflight({k: v for k, v in live.items() if k.startswith("Redis")})


@pytest.mark.integration
def test_stopped_kafka_ends_the_process_with_one_line() -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": DEAD, "MCP_SERVERS": "[]"}
    env.pop("REDIS_URL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "weir_tools"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert f"weir: cannot start: Kafka at {DEAD} is not reachable" in proc.stderr
    assert "Traceback" not in proc.stderr
