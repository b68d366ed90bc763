"""Memory settings: defaults and the environment layer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from weir_memory.settings import MemorySettings

pytestmark = pytest.mark.unit


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("WEIR_CONFIG", "/nonexistent/weir.toml")
    settings = MemorySettings()
    assert MemorySettings.service_name == "memory"
    assert settings.redis_url == "redis://127.0.0.1:16379/0"
    assert (settings.stm_window_turns, settings.stm_ttl_s) == (10, 86_400)
    assert settings.stm_backend == "redis"


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://10.0.0.1:6379/2")
    monkeypatch.setenv("STM_BACKEND", "memory")
    monkeypatch.setenv("STM_WINDOW_TURNS", "4")
    settings = MemorySettings()
    assert settings.redis_url == "redis://10.0.0.1:6379/2"
    assert settings.stm_backend == "memory"
    assert settings.stm_window_turns == 4


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(ValidationError):
        MemorySettings(stm_backend="sqlite")  # type: ignore[arg-type]
