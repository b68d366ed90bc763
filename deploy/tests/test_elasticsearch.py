"""The Elasticsearch engine: a private node as an unprivileged user, or an external one."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import httpx
import pytest

from weir_deploy import EngineStartError
from weir_deploy.base import free_port
from weir_deploy.elasticsearch import RUN_AS, ElasticsearchEngine
from weir_deploy.stack import ALL_ENGINES, KNOWN_ENGINES, Stack

pytestmark = pytest.mark.integration


def owners_of_processes_naming(path: Path) -> set[str]:
    """Users of the processes whose command line mentions ``path``."""
    users = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if str(path) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                users.add(pwd.getpwuid(proc.stat().st_uid).pw_name)
        except OSError:
            continue
    return users


async def test_private_node_answers_health(elasticsearch_env: dict[str, str]) -> None:
    url = elasticsearch_env["ES_URL"]
    async with httpx.AsyncClient() as client:
        health = (await client.get(f"{url}/_cluster/health")).json()
    assert health["status"] in ("green", "yellow")
    assert health["number_of_nodes"] == 1


async def test_runs_as_an_unprivileged_user(elasticsearch_env: dict[str, str]) -> None:
    if os.geteuid() != 0 or os.environ.get("ES_URL"):
        pytest.fail("this check needs root and a private node (CI runs as root)")
    config = Path(elasticsearch_env["DATA_DIR"]) / "elasticsearch" / "node" / "config"
    assert owners_of_processes_naming(config) == {RUN_AS}
    assert (config / "elasticsearch.yml").stat().st_uid == pwd.getpwnam(RUN_AS).pw_uid
    assert "xpack.security.enabled: false" in (config / "elasticsearch.yml").read_text()


async def test_unreachable_external_url_names_the_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ES_URL", f"http://127.0.0.1:{free_port()}")
    engine = ElasticsearchEngine(tmp_path, free_port())
    with pytest.raises(EngineStartError, match=r"^elasticsearch failed to start: external ES_URL"):
        await engine.start()
    assert engine.env() == {"ES_URL": os.environ["ES_URL"]}


def test_elasticsearch_is_optional() -> None:
    assert "elasticsearch" in KNOWN_ENGINES
    assert "elasticsearch" not in ALL_ENGINES
    with pytest.raises(ValueError, match="unknown engines"):
        Stack(["solr"])
