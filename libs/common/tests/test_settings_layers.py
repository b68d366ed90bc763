"""The layered settings: defaults < the TOML file (top level, then a table) < environment."""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import pytest
from pydantic import Field

from weir_common.embeddings import EmbeddingSettings
from weir_common.llm import LLMSettings
from weir_common.settings import LayeredSettings, WeirSettings, running_service

pytestmark = pytest.mark.unit


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty weir.toml named by WEIR_CONFIG, no running service named."""
    path = tmp_path / "weir.toml"
    path.write_text("")
    monkeypatch.setenv("WEIR_CONFIG", str(path))
    monkeypatch.delenv("SERVICE_NAME", raising=False)
    for name in ("LLM_MODEL", "LLM_FLASH_MODEL", "EMBEDDING_BATCH_SIZE", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    return path


class _Probe(WeirSettings):
    service_name: ClassVar[str] = "probe"
    probe_limit: int = 10


def test_a_service_reads_the_top_level_then_its_table_then_the_environment(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (_Probe().probe_limit, _Probe().log_level) == (10, "INFO")
    config.write_text('log_level = "WARNING"\nprobe_limit = 11\n[probe]\nprobe_limit = 12\n')
    assert (_Probe().probe_limit, _Probe().log_level) == (12, "WARNING")
    assert WeirSettings().log_level == "WARNING"  # the top level applies to everyone
    monkeypatch.setenv("PROBE_LIMIT", "13")
    assert _Probe().probe_limit == 13


def test_a_field_with_an_alias_is_read_by_its_variable(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Aliased(LayeredSettings):
        service_name: ClassVar[str] = "probe"
        limit: int = Field(default=1, validation_alias="PROBE_MAX")

    monkeypatch.delenv("PROBE_MAX", raising=False)
    config.write_text("limit = 5\n[probe]\nprobe_max = 2\n")
    assert Aliased().limit == 2
    monkeypatch.setenv("PROBE_MAX", "3")
    assert Aliased().limit == 3


def test_another_services_table_does_not_apply(config: Path) -> None:
    config.write_text("[gateway]\nprobe_limit = 99\n")
    assert _Probe().probe_limit == 10


def test_shared_settings_read_the_running_services_table(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text(
        'llm_model = "openai/everyone"\n[memory]\nllm_flash_model = "openai/small"\n'
        '[router]\nllm_model = "openai/router"\n'
    )
    assert LLMSettings().profile("flash").model == "openai/everyone"  # no service named
    monkeypatch.setenv("SERVICE_NAME", "memory")
    assert LLMSettings().profile("flash").model == "openai/small"
    assert LLMSettings().profile("pro").model == "openai/everyone"
    monkeypatch.setenv("SERVICE_NAME", "router")
    assert LLMSettings().profile("flash").model == "openai/router"


@pytest.mark.parametrize(
    ("main_module", "service"),
    [("weir_router.__main__", "router"), ("weir_rag.batch", None), ("pytest.__main__", None)],
)
def test_the_running_service_is_the_module_python_runs(
    config: Path, monkeypatch: pytest.MonkeyPatch, main_module: str, service: str | None
) -> None:
    main = ModuleType("__main__")
    main.__spec__ = ModuleSpec(main_module, None)
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert running_service() == service
    config.write_text('llm_model = "openai/top"\n[router]\nllm_model = "openai/router"\n')
    assert LLMSettings().llm_model == ("openai/router" if service else "openai/top")
    monkeypatch.setenv("SERVICE_NAME", "memory")  # the launcher's name wins
    assert running_service() == "memory"
    assert LLMSettings().llm_model == "openai/top"


@pytest.mark.parametrize(
    ("cls", "field", "toml", "env", "default"),
    [
        (LLMSettings, "llm_model", '"openai/toml"', "openai/env", None),
        (LLMSettings, "llm_timeout_s", "12.5", "13.5", 60.0),
        (EmbeddingSettings, "embedding_batch_size", "8", "16", 32),
        (EmbeddingSettings, "embedding_model", '"openai/e"', "openai/f", None),
    ],
)
def test_shared_settings_default_then_toml_then_environment(
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    cls: type[LayeredSettings],
    field: str,
    toml: str,
    env: str,
    default: object,
) -> None:
    monkeypatch.delenv(field.upper(), raising=False)
    assert getattr(cls(), field) == default
    config.write_text(f"{field} = {toml}\n")
    read = getattr(cls(), field)
    assert read != default
    assert str(read) == toml.strip('"')
    monkeypatch.setenv(field.upper(), env)
    assert str(getattr(cls(), field)) == env


def test_secrets_in_the_environment_are_read(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-env")
    key = LLMSettings().llm_api_key
    assert key is not None
    assert key.get_secret_value() == "sk-env"
