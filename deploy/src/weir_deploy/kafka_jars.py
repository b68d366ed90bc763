"""Apache Kafka broker classpath: resolved once with Maven from deploy/kafka/pom.xml."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import structlog

from .base import DEPLOY_DIR, EngineStartError
from .process import run_tool

log = structlog.get_logger(__name__)


def pom_path() -> Path:
    """The pom that lists the broker jars (env ``WEIR_KAFKA_POM`` overrides)."""
    raw = os.environ.get("WEIR_KAFKA_POM")
    return Path(raw) if raw else DEPLOY_DIR / "kafka" / "pom.xml"


def classpath_file() -> Path:
    """Where the resolved classpath is cached (next to the pom, in ``target/``)."""
    return pom_path().parent / "target" / "classpath.txt"


def cached_classpath() -> str | None:
    """The cached classpath when it is newer than the pom and all its jars exist."""
    cache, pom = classpath_file(), pom_path()
    if not cache.exists() or cache.stat().st_mtime < pom.stat().st_mtime:
        return None
    classpath = cache.read_text().strip()
    jars = [jar for jar in classpath.split(os.pathsep) if jar]
    if not jars or not all(Path(jar).exists() for jar in jars):
        return None
    return classpath


async def ensure_classpath(log_dir: Path) -> str:
    """Return the broker classpath, running ``mvn dependency:build-classpath`` if needed."""
    cached = cached_classpath()
    if cached is not None:
        return cached
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EngineStartError("kafka", "mvn not found (run deploy/install-system.sh)")
    cache = classpath_file()
    cache.parent.mkdir(parents=True, exist_ok=True)
    base = [mvn, "-q", "-B", "-f", str(pom_path()), "dependency:build-classpath",
            f"-Dmdep.outputFile={cache}"]  # fmt: skip
    log_path = log_dir / "kafka-maven.log"
    log.info("kafka.fetch", pom=str(pom_path()), log=str(log_path))
    try:  # offline first: after one fetch everything is in ~/.m2
        await run_tool("kafka", [*base, "-o"], log_path, max_wait=300)
    except EngineStartError:
        await run_tool("kafka", base, log_path, max_wait=600)
    result = cached_classpath()
    if result is None:
        raise EngineStartError("kafka", "maven produced no usable classpath", log_path)
    return result
