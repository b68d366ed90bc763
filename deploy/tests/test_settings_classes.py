"""Every settings class of every service reads defaults < TOML file < environment."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from weir_common.settings import LayeredSettings
from weir_deploy.settings_table import owners

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

#: class name -> (field, a TOML value, an environment value); none of them the default
CASES: dict[str, tuple[str, object, str]] = {
    "WeirSettings": ("log_level", "WARNING", "ERROR"),
    "LLMSettings": ("llm_model", "openai/toml", "openai/env"),
    "EmbeddingSettings": ("embedding_batch_size", 8, "16"),
    "GatewaySettings": ("max_message_chars", 1234, "4321"),
    "MemoryApiSettings": ("memory_api_timeout_s", 3.5, "4.5"),
    "RouterSettings": ("delta_max_chars", 12, "13"),
    "HarnessSettings": ("max_attempts", 5, "6"),
    "ToolsSettings": ("max_result_chars", 5000, "6000"),
    "RagSettings": ("ingest_timeout_s", 60.0, "70.0"),
    "IndexSettings": ("milvus_collection", "toml_chunks", "env_chunks"),
    "MemorySettings": ("recall_top_k", 7, "8"),
    "BatchSettings": ("topic_prefix", "toml.", "env."),
}
CLASSES = {owner.cls.__name__: owner.cls for owner in owners()}


def test_every_registered_class_has_a_case() -> None:
    assert sorted(CASES) == sorted(CLASSES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_then_toml_then_environment(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = CLASSES[name]
    assert issubclass(cls, LayeredSettings)
    field, toml_value, env_value = CASES[name]
    variable = field.upper()
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("SERVICE_NAME", raising=False)
    config = tmp_path / "weir.toml"
    monkeypatch.setenv("WEIR_CONFIG", str(config))
    default = cls.model_fields[field].default
    assert getattr(cls(), field) == default  # no file: the default

    table = cls.toml_table()
    line = f"{field} = {json.dumps(toml_value)}\n"
    # the class's own table when it has one; the key at the top level when not
    config.write_text(f"{field} = {json.dumps(default)}\n[{table}]\n{line}" if table else line)
    assert getattr(cls(), field) == toml_value
    monkeypatch.setenv(variable, env_value)
    assert str(getattr(cls(), field)) == env_value


def test_no_settings_class_skips_the_layers() -> None:
    """Every class in the sources that reads settings is a registered `LayeredSettings`."""
    pattern = re.compile(r"^class (\w+)\((\w*Settings)\):", re.MULTILINE)
    found: dict[str, str] = {}
    for path in [*ROOT.glob("services/*/src/**/*.py"), *ROOT.glob("libs/*/src/**/*.py")]:
        for name, base in pattern.findall(path.read_text()):
            found[name] = f"{path.relative_to(ROOT)} ({base})"
    unregistered = {n: where for n, where in found.items() if n not in CLASSES}
    assert unregistered == {"LayeredSettings": "libs/common/src/weir_common/settings.py "
                            "(BaseSettings)"}, unregistered  # fmt: skip
    assert all(issubclass(cls, LayeredSettings) for cls in CLASSES.values())
    assert not any(BaseSettings in cls.__bases__ for cls in CLASSES.values()), (
        "a settings class derives from BaseSettings directly"
    )
