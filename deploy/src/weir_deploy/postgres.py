"""PostgreSQL engine: a private cluster on 127.0.0.1, or an external one (``DATABASE_URL``)."""

from __future__ import annotations

import os
import pwd
import signal
import stat
import time
from pathlib import Path

import structlog

from .base import EngineStartError, ensure_port_free
from .process import ManagedProcess, run_tool

log = structlog.get_logger(__name__)

DB_NAME = "weir"
DB_USER = "weir"
RUN_AS = "postgres"


def find_pg_bin() -> Path | None:
    """Newest ``/usr/lib/postgresql/<version>/bin`` with initdb and postgres (or WEIR_PG_BIN)."""
    override = os.environ.get("WEIR_PG_BIN")
    candidates = [Path(override)] if override else []
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for path in [*candidates, *found]:
        if (path / "initdb").exists() and (path / "postgres").exists():
            return path
    return None


async def query_one(dsn: str) -> None:
    """Raise unless ``select 1`` succeeds on ``dsn``."""
    import asyncpg  # noqa: PLC0415

    conn = await asyncpg.connect(dsn, timeout=3)
    try:
        await conn.fetchval("select 1")
    finally:
        await conn.close()


def _make_traversable(path: Path, owned_root: Path) -> None:
    """Let the ``postgres`` user walk down to ``path``: o+x inside our folder, check above."""
    for directory in [path, *path.parents]:
        mode = directory.stat().st_mode
        if mode & stat.S_IXOTH:
            continue
        if directory == owned_root or owned_root in directory.parents:
            directory.chmod(mode | stat.S_IXOTH)
        else:
            raise EngineStartError(
                "postgres", f"{directory} is not traversable by user {RUN_AS} (needs o+x)"
            )


class PostgresEngine:
    """A private cluster under ``<data_dir>/postgres`` with trust auth on loopback."""

    name = "postgres"

    def __init__(
        self, data_dir: Path, port: int, *, durable: bool = True, timeout: float = 90.0
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.durable = durable
        self.timeout = timeout
        self.external_url = os.environ.get("DATABASE_URL")
        self.url = self.external_url or f"postgresql://{DB_USER}@127.0.0.1:{port}/{DB_NAME}"
        self.pgdata = data_dir / "postgres" / "pgdata"
        self._proc: ManagedProcess | None = None
        self.startup_seconds: float | None = None

    def _as_user(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", RUN_AS, "--", *argv] if os.geteuid() == 0 else argv

    async def _initdb(self, bin_dir: Path) -> None:
        root = os.geteuid() == 0
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if root:
            try:
                user = pwd.getpwnam(RUN_AS)
            except KeyError as exc:
                raise EngineStartError(self.name, f"running as root but no user {RUN_AS}") from exc
            _make_traversable(self.pgdata.parent, self.data_dir)
            os.chown(self.pgdata.parent, user.pw_uid, user.pw_gid)
        if (self.pgdata / "PG_VERSION").exists():
            return
        argv = [str(bin_dir / "initdb"), "-D", str(self.pgdata), "-U", DB_USER, "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]  # fmt: skip
        await run_tool(self.name, self._as_user(argv), self.data_dir / "logs" / "postgres.log")

    async def _health(self) -> None:
        await query_one(f"postgresql://{DB_USER}@127.0.0.1:{self.port}/postgres")

    async def _create_db(self) -> None:
        import asyncpg  # noqa: PLC0415

        conn = await asyncpg.connect(
            f"postgresql://{DB_USER}@127.0.0.1:{self.port}/postgres", timeout=5
        )
        try:
            exists = await conn.fetchval("select 1 from pg_database where datname = $1", DB_NAME)
            if not exists:
                await conn.execute(f'create database "{DB_NAME}"')
        finally:
            await conn.close()

    async def start(self) -> None:
        """initdb once, start ``postgres`` in the foreground, create database ``weir``."""
        began = time.monotonic()
        if self.external_url:
            try:
                await query_one(self.external_url)
            except Exception as exc:
                raise EngineStartError(self.name, f"external DATABASE_URL failed: {exc}") from exc
            self.startup_seconds = time.monotonic() - began
            return
        bin_dir = find_pg_bin()
        if bin_dir is None:
            raise EngineStartError(
                self.name, "no /usr/lib/postgresql/*/bin found (run deploy/install-system.sh)"
            )
        ensure_port_free(self.name, self.port)
        await self._initdb(bin_dir)
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.pgdata),
            "shared_buffers": "64MB",
            "fsync": "on" if self.durable else "off",
            "synchronous_commit": "on" if self.durable else "off",
            "full_page_writes": "on" if self.durable else "off",
        }
        argv = [str(bin_dir / "postgres"), "-D", str(self.pgdata)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        self._proc = ManagedProcess(
            self.name, self._as_user(argv), self.data_dir / "logs",
            stop_signal=signal.SIGINT, grace=15.0,
        )  # fmt: skip
        self._proc.spawn()
        await self._proc.wait_healthy(self._health, self.timeout)
        try:
            await self._create_db()
        except Exception as exc:
            await self.stop()
            raise EngineStartError(self.name, f"create database {DB_NAME}: {exc}") from exc
        self.startup_seconds = time.monotonic() - began
        log.info("engine.ready", engine=self.name, url=self.url, seconds=self.startup_seconds)

    async def stop(self) -> None:
        """Fast shutdown of the private cluster (no-op for an external one)."""
        if self._proc is not None:
            await self._proc.stop()
            self._proc = None

    def env(self) -> dict[str, str]:
        """``DATABASE_URL`` for clients."""
        return {"DATABASE_URL": self.url}
