"""A service started while an engine it needs is down says which, in one line, and exits 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from weir_deploy.base import free_port

pytestmark = pytest.mark.integration


def _start(service: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"weir_{service}"],
        env={**os.environ, "SERVICE_PORT": str(free_port()), **env},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.parametrize("service", ["gateway", "harness", "router", "memory"])
def test_kafka_down_is_named(service: str) -> None:
    dead = f"127.0.0.1:{free_port()}"
    done = _start(service, KAFKA_BOOTSTRAP_SERVERS=dead)
    assert done.returncode == 1
    assert f"weir: cannot start: Kafka at {dead} is not reachable" in done.stderr
    assert "Traceback" not in done.stderr


def test_postgres_down_is_named(stack_env: dict[str, str]) -> None:
    url = f"postgresql://weir@127.0.0.1:{free_port()}/weir"
    done = _start(
        "harness", KAFKA_BOOTSTRAP_SERVERS=stack_env["KAFKA_BOOTSTRAP_SERVERS"], DATABASE_URL=url
    )
    assert done.returncode == 1
    assert f"weir: cannot start: PostgreSQL at {url} is not reachable" in done.stderr
    assert "Traceback" not in done.stderr


def test_redis_down_is_named(stack_env: dict[str, str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = _start(
        "memory", KAFKA_BOOTSTRAP_SERVERS=stack_env["KAFKA_BOOTSTRAP_SERVERS"], REDIS_URL=url
    )
    assert done.returncode == 1
    assert "weir: cannot start: Redis at" in done.stderr
    assert "is not reachable" in done.stderr
    assert "Traceback" not in done.stderr
