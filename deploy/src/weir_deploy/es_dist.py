"""The Elasticsearch distribution: fetched once with Maven into ~/.m2, unpacked under the data
folder. Maven Central carries Elastic's minimal ``integ-test-zip`` (8.19.21 is the newest
there: no 9.x, no bundled JDK, no analysis-common module, x-pack security only)."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import zipfile
from pathlib import Path

import structlog

from .base import EngineStartError, default_data_dir
from .process import run_tool

log = structlog.get_logger(__name__)

ES_VERSION = os.environ.get("WEIR_ES_VERSION", "8.19.21")
ARTIFACT = "org.elasticsearch.distribution.integ-test-zip:elasticsearch"


def m2_zip(version: str = ES_VERSION) -> Path:
    """Where Maven keeps the distribution zip."""
    group = ARTIFACT.split(":", maxsplit=1)[0].replace(".", "/")
    return (Path.home() / ".m2" / "repository" / group / "elasticsearch" / version
            / f"elasticsearch-{version}.zip")  # fmt: skip


def dist_home(version: str = ES_VERSION) -> Path:
    """The unpacked distribution, shared by every stack on this machine (read-only use)."""
    return default_data_dir() / "elasticsearch" / "dist" / f"elasticsearch-{version}"


async def fetch_zip(log_dir: Path, version: str = ES_VERSION) -> Path:
    """The zip in ~/.m2, downloading it with ``mvn dependency:get`` when missing."""
    target = m2_zip(version)
    if target.exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EngineStartError("elasticsearch", "mvn not found (run deploy/install-system.sh)")
    argv = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={ARTIFACT}:{version}:zip",
            "-Dtransitive=false"]  # fmt: skip
    log.info("elasticsearch.fetch", version=version)
    await run_tool("elasticsearch", argv, log_dir / "elasticsearch-maven.log", max_wait=900)
    if not target.exists():
        raise EngineStartError("elasticsearch", f"maven did not produce {target}")
    return target


def _unpack(zip_path: Path, home: Path) -> None:
    staging = home.parent / f".{home.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as archive:
        for member in archive.infolist():
            path = Path(archive.extract(member, staging))
            mode = member.external_attr >> 16  # zipfile drops the Unix mode bits: restore them
            if mode and not path.is_symlink():
                path.chmod(stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IROTH)
    (staging / home.name).rename(home)
    shutil.rmtree(staging, ignore_errors=True)


async def ensure_distribution(log_dir: Path, version: str = ES_VERSION) -> Path:
    """The unpacked distribution's home folder (fetch + unzip on first use)."""
    home = dist_home(version)
    if (home / "bin" / "elasticsearch").exists():
        return home
    zip_path = await fetch_zip(log_dir, version)
    home.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(_unpack, zip_path, home)
    log.info("elasticsearch.unpacked", home=str(home))
    return home
