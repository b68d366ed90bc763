"""Start failures, clean stops, the services launcher and the CLI."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from weir_deploy import EngineStartError, Services, Stack
from weir_deploy.base import free_port, port_in_use
from weir_deploy.kafka import TansuKafka
from weir_deploy.process import ManagedProcess
from weir_deploy.redis import RedisEngine
from weir_deploy.services import http_health

pytestmark = pytest.mark.integration


def group_members(pgid: int, settle: float = 3.0) -> list[int]:
    """Pids of live (non-zombie) processes in a process group, after up to ``settle`` s."""
    deadline = time.monotonic() + settle
    while True:
        pids = _members(pgid)
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


def _members(pgid: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


async def test_missing_binary_names_engine(tmp_path: Path) -> None:
    engine = RedisEngine(tmp_path, free_port(), binary="/nonexistent/redis-server")
    with pytest.raises(EngineStartError, match=r"^redis failed to start: .*not found"):
        await engine.start()


async def test_occupied_port_names_engine(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(EngineStartError, match=rf"^redis failed to start: port .*{port}"):
            await RedisEngine(tmp_path, port).start()


async def test_stack_failure_stops_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_REDIS_SERVER", "/nonexistent/redis-server")
    stack = Stack(("kafka", "redis"), ephemeral=True, kafka_impl="tansu")
    with pytest.raises(EngineStartError, match=r"^redis failed"):
        await stack.start()
    kafka = stack.engine("kafka")
    assert isinstance(kafka, TansuKafka)
    assert kafka._proc is None
    assert (stack.data_dir / "logs").is_dir()  # kept after a failure, for its logs
    shutil.rmtree(stack.data_dir)


async def test_early_exit_shows_log_tail(tmp_path: Path) -> None:
    proc = ManagedProcess("boom", ["sh", "-c", "echo kaboom-reason; exit 3"], tmp_path)
    proc.spawn()

    async def never() -> None:
        raise ConnectionError("not yet")

    with pytest.raises(EngineStartError) as info:
        await proc.wait_healthy(never, 10)
    message = str(info.value)
    assert message.startswith("boom failed to start: process exited early with code 3")
    assert "kaboom-reason" in message
    assert str(tmp_path / "boom.log") in message


async def test_stop_kills_process_group(tmp_path: Path) -> None:
    proc = ManagedProcess(
        "tree", ["sh", "-c", "trap '' TERM; sleep 300 & sleep 300"], tmp_path, grace=0.5
    )
    proc.spawn()
    pgid = proc.pid
    assert pgid is not None
    await asyncio.sleep(0.3)
    assert len(_members(pgid)) >= 2
    await proc.stop()
    assert group_members(pgid) == []


async def test_stack_stop_leaves_no_child() -> None:
    async with Stack(("kafka", "redis"), ephemeral=True, kafka_impl="tansu") as stack:
        pids = [e._proc.pid for e in stack.engines if e._proc is not None]  # type: ignore[attr-defined]
        assert len(pids) == 2
        data_dir = stack.data_dir
    for pid in pids:
        assert group_members(pid) == []
    assert not data_dir.exists()


FAKE_SERVICE = """
import http.server, json, os

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        body = {"service": os.environ["SERVICE_NAME"], "redis": os.environ["REDIS_URL"]}
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", int(os.environ["SERVICE_PORT"])), H).serve_forever()
"""


def fake_services(tmp_path: Path, *names: str, supervise: bool = False) -> Services:
    """`Services` of `FAKE_SERVICE` under each name (a `weir_<name>` module in tmp_path)."""
    for name in names:
        (tmp_path / f"weir_{name}").mkdir()
        (tmp_path / f"weir_{name}" / "__main__.py").write_text(textwrap.dedent(FAKE_SERVICE))
    return Services(
        {"REDIS_URL": "redis://x"},
        tmp_path / "logs",
        names=list(names),
        extra_env={"PYTHONPATH": str(tmp_path)},
        supervise=supervise,
    )


async def test_services_start_and_stop(tmp_path: Path) -> None:
    services = fake_services(tmp_path, "fakea", "fakeb")
    async with services:
        async with httpx.AsyncClient() as client:
            response = await client.get(services.url("fakeb") + "/health")
        assert response.status_code == 200
        assert response.json() == {"service": "fakeb", "redis": "redis://x"}
        pids = [p.pid for p in services._procs.values()]
    assert all(group_members(pid) == [] for pid in pids if pid is not None)


async def test_a_stranger_on_the_port_is_not_taken_for_the_service(tmp_path: Path) -> None:
    # memory and the harness of one start were once given the same port: the harness bound
    # it, and memory's health wait took the harness's /health for its own
    async with fake_services(tmp_path, "faked") as services:
        url = services.url("faked") + "/health"
        await http_health(url, "faked")
        with pytest.raises(RuntimeError, match="answered for 'faked', not 'memory'"):
            await http_health(url, "memory")


async def test_missing_service_fails_with_name(tmp_path: Path) -> None:
    services = Services({}, tmp_path, names=["nosuchservice"], timeout=20)
    with pytest.raises(EngineStartError, match=r"^nosuchservice failed to start: process exited"):
        await services.start()


def test_cli_up_and_sigterm(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path),
        "WEIR_REDIS_PORT": str(free_port()),
        "WEIR_KAFKA_PORT": str(free_port()),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "weir_deploy", "up", "--engines", "redis", "kafka",
         "--kafka-impl", "tansu"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        assert any(line.startswith("REDIS_URL=redis://127.0.0.1:") for line in lines), lines
        assert any(line.startswith("KAFKA_BOOTSTRAP_SERVERS=") for line in lines), lines
        assert (tmp_path / "stack.env").read_text().count("=") >= 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert group_members(proc.pid) == []


def test_cli_engine_error_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "DATA_DIR": str(tmp_path), "WEIR_REDIS_SERVER": "/nope/redis"}
    result = subprocess.run(
        [sys.executable, "-m", "weir_deploy", "up", "--engines", "redis"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: redis failed to start: /nope/redis not found (run deploy/install-system.sh)"
    ]
    assert "Traceback" not in result.stderr


def test_cli_doctor() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "weir_deploy", "doctor"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


async def test_supervised_service_is_restarted_and_stop_ends_it(tmp_path: Path) -> None:
    services = fake_services(tmp_path, "fakec", supervise=True)
    async with services:
        first = services.pid("fakec")
        assert first is not None
        os.kill(first, signal.SIGKILL)
        async with asyncio.timeout(20):
            while services.pid("fakec") in (None, first):  # noqa: ASYNC110 - polls a child
                await asyncio.sleep(0.1)
        await services.wait_healthy("fakec", 20)
        second = services.pid("fakec")
        assert second not in (None, first)
        assert services.restarts == {"fakec": 1}
    assert group_members(second) == []
    await asyncio.sleep(1.0)  # a supervisor still running would have started it again
    assert services.pid("fakec") is None
    assert services.restarts == {"fakec": 1}


async def test_a_service_that_keeps_crashing_is_restarted_with_growing_delays(
    tmp_path: Path,
) -> None:
    (tmp_path / "weir_faked").mkdir()
    (tmp_path / "weir_faked" / "__main__.py").write_text(textwrap.dedent(FAKE_SERVICE))
    services = Services(
        {"REDIS_URL": "redis://x"},
        tmp_path / "logs",
        names=["faked"],
        extra_env={"PYTHONPATH": str(tmp_path)},
        supervise=True,
    )
    waits = []
    async with services:
        for _ in range(3):
            pid = services.pid("faked")
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            async with asyncio.timeout(20):
                while services.pid("faked") in (None, pid):  # noqa: ASYNC110 - polls a child
                    await asyncio.sleep(0.05)
            waits.append(time.monotonic() - killed)
            await services.wait_healthy("faked", 20)
    assert services.restarts == {"faked": 3}
    # 0.5 s, 1 s, 2 s before each restart (plus polling and start-up)
    assert waits[0] >= 0.5
    assert waits[1] >= 1.0
    assert waits[2] >= 2.0
    assert waits[2] - waits[0] > 1.0


def _child_running(parent: int, module: str) -> int | None:
    """Pid of ``parent``'s child process running ``python -m <module>``, if any."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z" and module.encode() in cmdline:
            return int(stat.parent.name)
    return None


def test_cli_run_restarts_a_crashed_service_and_sigint_stops_everything(tmp_path: Path) -> None:
    (tmp_path / "weir_fakee").mkdir()
    (tmp_path / "weir_fakee" / "__main__.py").write_text(textwrap.dedent(FAKE_SERVICE))
    data = Path(tempfile.mkdtemp(prefix="weir-cli-run-"))  # reachable by the postgres user
    env = {**os.environ, "DATA_DIR": str(data), "PYTHONPATH": str(tmp_path)}
    for name in ("kafka", "postgres", "redis", "milvus", "gateway"):
        env[f"WEIR_{name.upper()}_PORT"] = str(free_port())
    for url in ("KAFKA_BOOTSTRAP_SERVERS", "DATABASE_URL", "REDIS_URL", "MILVUS_URI"):
        env.pop(url, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "weir_deploy", "run", "--services", "fakee",
         "--kafka-impl", "tansu"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("weir is running"), "run did not come up"
        first = _child_running(proc.pid, "weir_fakee")
        assert first is not None
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _child_running(proc.pid, "weir_fakee") in (None, first):
            assert proc.poll() is None, "run ended when one service died"
            assert time.monotonic() < deadline, "the crashed service was not restarted"
            time.sleep(0.1)
        second = _child_running(proc.pid, "weir_fakee")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)
    assert second is not None
    assert group_members(second) == []
    engines = ("kafka", "postgres", "redis", "milvus")
    ports = [int(env[f"WEIR_{name.upper()}_PORT"]) for name in engines]
    assert [port for port in ports if port_in_use(port)] == []  # the engines stopped too
