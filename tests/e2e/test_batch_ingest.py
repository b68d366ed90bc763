"""Batch re-ingestion (F16) against the running product: progress from outcome events,
unchanged documents skipped, a second run finishes only what is missing or changed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from weir_deploy.services import Services

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


async def _batch(product: Services, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "weir_rag.batch", *args,
        env=dict(product.base_env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 240)
    return proc.returncode or 0, out.decode()


async def test_a_folder_is_ingested_then_only_changes_are(
    product: Services, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "ops").mkdir(parents=True)
    (docs / "ops" / "restart.md").write_text(
        "# Restarting services\n\nTo restart user-service, drain it first, then run the "
        "rollout restart command and watch the error rate for ten minutes.\n"
    )
    (docs / "servers.csv").write_text("host,cpu,memory\nweb-1,8,32GB\nweb-2,16,64GB\n")
    (docs / "api.json").write_text('{"endpoints": [{"path": "/v1/users", "method": "GET"}]}')

    code, out = await _batch(product, str(docs), "--owner", "batch-user")
    assert code == 0, out
    assert "3 to ingest" in out
    assert "done: 3 ingested or unchanged, 0 failed" in out

    code, out = await _batch(product, str(docs), "--owner", "batch-user")
    assert code == 0, out
    assert "0 to ingest" in out

    (docs / "servers.csv").write_text("host,cpu,memory\nweb-1,8,32GB\nweb-3,4,16GB\n")
    code, out = await _batch(product, str(docs), "--owner", "batch-user")
    assert code == 0, out
    assert "1 to ingest" in out
