"""Start-up: a stopped engine ends the process with one line naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from weir_common.runtime import EngineUnavailableError, preflight
from weir_memory.__main__ import engine_checks
from weir_memory.settings import MemorySettings

DEAD = "127.0.0.1:1"  # nothing listens on port 1


@pytest.mark.unit
def test_checks_name_each_engine_without_secrets() -> None:
    settings = MemorySettings(
        kafka_bootstrap_servers=DEAD,
        redis_url=f"redis://:secret@{DEAD}/0",
        database_url=f"postgresql://weir:secret@{DEAD}/weir",
        milvus_uri=f"http://{DEAD}",
    )
    assert list(engine_checks(settings)) == [
        f"Kafka at {DEAD}",
        f"Redis at redis://:***@{DEAD}/0",
        f"PostgreSQL at postgresql://weir:***@{DEAD}/weir",
        f"Milvus at http://{DEAD}",
    ]
    memory_only = MemorySettings(
        kafka_bootstrap_servers=DEAD, stm_backend="memory", long_term=False
    )
    assert list(engine_checks(memory_only)) == [f"Kafka at {DEAD}"]
    in_process_vectors = MemorySettings(kafka_bootstrap_servers=DEAD, vector_backend="memory")
    assert f"Milvus at {in_process_vectors.milvus_uri}" not in engine_checks(in_process_vectors)


@pytest.mark.integration
async def test_stopped_redis_is_named(redis_url: str) -> None:
    checks = engine_checks(MemorySettings(redis_url=f"redis://{DEAD}/0"))
    with pytest.raises(EngineUnavailableError, match=f"^Redis at redis://{DEAD}/0 is not"):
        await preflight({k: v for k, v in checks.items() if k.startswith("Redis")})
    live = engine_checks(MemorySettings(redis_url=redis_url))
    await preflight({k: v for k, v in live.items() if k.startswith("Redis")})


@pytest.mark.integration
def test_stopped_kafka_ends_the_process_with_one_line() -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": DEAD, "STM_BACKEND": "memory"}
    proc = subprocess.run(
        [sys.executable, "-m", "weir_memory"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert f"weir: cannot start: Kafka at {DEAD} is not reachable" in proc.stderr
    assert "Traceback" not in proc.stderr
