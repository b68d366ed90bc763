"""The trace viewer's launcher refuses clearly when Phoenix is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_deploy.base import EngineStartError, free_port
from weir_deploy.phoenix import PhoenixEngine, find_phoenix

pytestmark = pytest.mark.unit


async def test_a_missing_phoenix_names_the_make_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEIR_PHOENIX", str(tmp_path / "no-such-phoenix"))
    assert find_phoenix() is None
    engine = PhoenixEngine(tmp_path, free_port())
    with pytest.raises(EngineStartError, match="make traces-env"):
        await engine.start()
    await engine.stop()
    assert engine.env() == {"OTEL_EXPORTER_OTLP_ENDPOINT": engine.url}
