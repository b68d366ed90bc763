"""Elasticsearch engine: a private single node on 127.0.0.1, or an external one (``ES_URL``).

Elasticsearch refuses to run as root, so as root the node runs as the system user
``weir-es`` (created with ``useradd`` when missing); its config, data and logs live under
``<data_dir>/elasticsearch/node`` and belong to that user.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import structlog

from .base import EngineStartError, ensure_port_free, free_port, tcp_open
from .es_dist import ensure_distribution
from .process import ManagedProcess

log = structlog.get_logger(__name__)

RUN_AS = "weir-es"
JVM_DIR = Path("/usr/lib/jvm")
MIN_JAVA = 21
DEFAULT_HEAP = "512m"


async def check(url: str) -> None:
    """Raise unless ``GET /_cluster/health`` answers with status green or yellow."""
    from elasticsearch import AsyncElasticsearch  # noqa: PLC0415 - only when needed

    client = AsyncElasticsearch(url, request_timeout=5)
    try:
        health = await client.cluster.health()
        if health["status"] not in ("green", "yellow"):
            raise ConnectionError(f"cluster status {health['status']}")
    finally:
        await client.close()


def _java_major(home: Path) -> int:
    """Major version from a JDK folder name such as ``temurin-25-jdk-amd64``."""
    match = re.search(r"(?:temurin|java|jdk|openjdk)-(\d+)", home.name)
    return int(match.group(1)) if match else 0


def find_es_java_home() -> str | None:
    """``ES_JAVA_HOME``, else the newest JDK 21+ under /usr/lib/jvm (Temurin 25 on this
    project's machines, beside the default Java 17)."""
    configured = os.environ.get("ES_JAVA_HOME")
    if configured:
        return configured
    homes = [h for h in JVM_DIR.glob("*") if (h / "bin" / "java").exists() and not h.is_symlink()]
    usable = sorted((h for h in homes if _java_major(h) >= MIN_JAVA), key=_java_major)
    return str(usable[-1]) if usable else None


def ensure_user() -> pwd.struct_passwd:
    """The unprivileged ``weir-es`` account (created when missing; needs root)."""
    try:
        return pwd.getpwnam(RUN_AS)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", RUN_AS], check=True, capture_output=True)  # fmt: skip
        return pwd.getpwnam(RUN_AS)


def _traversable(path: Path) -> None:
    """Let other users walk down to ``path`` (adds o+x where it is missing)."""
    for directory in [path, *path.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(mode | stat.S_IXOTH)


class ElasticsearchEngine:
    """A single-node, security-off Elasticsearch with a small heap."""

    name = "elasticsearch"

    def __init__(self, data_dir: Path, port: int, *, timeout: float = 180.0) -> None:
        self.data_dir = data_dir
        self.port = port
        self.transport_port = free_port()
        self.timeout = timeout
        self.external_url = os.environ.get("ES_URL")
        self.url = self.external_url or f"http://127.0.0.1:{port}"
        self.node_dir = data_dir / "elasticsearch" / "node"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None

    def _config(self, home: Path) -> Path:
        conf = self.node_dir / "config"
        (conf / "jvm.options.d").mkdir(parents=True, exist_ok=True)
        for name in ("jvm.options", "log4j2.properties"):
            shutil.copy(home / "config" / name, conf / name)
        heap = os.environ.get("WEIR_ES_HEAP", DEFAULT_HEAP)
        (conf / "jvm.options.d" / "heap.options").write_text(f"-Xms{heap}\n-Xmx{heap}\n")
        settings = {
            "cluster.name": "weir", "node.name": "weir-es",
            "path.data": str(self.node_dir / "data"), "path.logs": str(self.node_dir / "logs"),
            "network.host": "127.0.0.1", "http.port": str(self.port),
            # a range: the node binds its transport port ~10 s after the port was chosen, and
            # an engine started meanwhile may take it (seen once in CI: bindServer failed)
            "transport.port": f"{self.transport_port}-{self.transport_port + 19}",
            "discovery.type": "single-node",
            "xpack.security.enabled": "false",
            "cluster.routing.allocation.disk.threshold_enabled": "false",
        }  # fmt: skip
        (conf / "elasticsearch.yml").write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
        for sub in ("data", "logs", "tmp"):
            (self.node_dir / sub).mkdir(exist_ok=True)
        return conf

    def _argv(self, home: Path) -> list[str]:
        command = [str(home / "bin" / "elasticsearch")]
        if os.geteuid() != 0:
            return command
        user = ensure_user()
        for path in [self.node_dir, *self.node_dir.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
        _traversable(self.node_dir)
        _traversable(home / "bin")
        return ["runuser", "-u", RUN_AS, "--", *command]

    async def start(self) -> None:
        """Fetch/unpack once, write the node's config, start it and wait for health."""
        began = time.monotonic()
        if self.external_url:
            try:
                await check(self.external_url)
            except Exception as exc:
                raise EngineStartError(self.name, f"external ES_URL unreachable: {exc}") from exc
            self.startup_seconds = time.monotonic() - began
            return
        java_home = find_es_java_home()
        if java_home is None:
            raise EngineStartError(self.name, "no JDK 21+ found (set ES_JAVA_HOME)")
        ensure_port_free(self.name, self.port)
        ensure_port_free(self.name, self.transport_port)
        home = await ensure_distribution(self.data_dir / "logs")
        conf = self._config(home)
        env = {**os.environ, "ES_JAVA_HOME": java_home, "ES_PATH_CONF": str(conf),
               "ES_TMPDIR": str(self.node_dir / "tmp")}  # fmt: skip
        env.pop("JAVA_HOME", None)
        self._proc = ManagedProcess(self.name, self._argv(home), self.data_dir / "logs",
                                    env=env, grace=20.0)  # fmt: skip
        self._proc.spawn()
        await self._proc.wait_healthy(self._health, self.timeout)
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, url=self.url,
                 seconds=round(self.startup_seconds, 2))  # fmt: skip

    async def _health(self) -> None:
        if not await tcp_open(self.port):
            raise ConnectionError(f"port {self.port} not open yet")
        await check(self.url)

    async def stop(self) -> None:
        """SIGTERM the node (it flushes and exits), SIGKILL after the grace period."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """``ES_URL`` for clients."""
        return {"ES_URL": self.url}
