"""The README's table of every setting is generated and current."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field, SecretStr

from weir_common.settings import WeirSettings
from weir_common.settings_doc import BEGIN, END, Owner, render, replace_table, rows
from weir_deploy.settings_table import NOTES, REGENERATE, owners, table, updated

pytestmark = pytest.mark.unit
README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_current() -> None:
    assert updated(README) == README.read_text(), (
        f"README.md's settings table is stale: run `{REGENERATE}`"
    )


def test_every_setting_is_listed_once_and_described() -> None:
    listed = rows(owners(), NOTES)
    variables = [row.variable for row in listed]
    assert len(variables) == len(set(variables))
    assert {"KAFKA_BOOTSTRAP_SERVERS", "LLM_MODEL", "EMBEDDING_MODEL", "WEIR_MEMORY_URL",
            "LEXICAL_BACKEND", "RECALL_TOP_K", "MCP_SERVERS"} <= set(variables)  # fmt: skip
    assert [row.variable for row in listed if not row.descriptions] == []
    shared = next(row for row in listed if row.variable == "LOG_LEVEL")
    assert shared.services == ["all"]
    assert table().count("| `WEIR_SERVICE_TOKEN` |") == 1  # in WeirSettings and the gateway's


def test_secrets_show_no_default() -> None:
    class Probe(WeirSettings):
        probe_key: SecretStr = Field(default=SecretStr("s3cret"), description="A key.")
        probe_optional_key: SecretStr | None = SecretStr("other")

    rendered = render([Owner(Probe, ("probe",), "`[probe]`")])
    assert "s3cret" not in rendered
    assert "other" not in rendered
    assert "| `PROBE_KEY` | *secret* | `[probe]` | probe | A key. |" in rendered


def test_differing_defaults_are_named_per_service() -> None:
    class One(WeirSettings):
        shared_limit: int = Field(default=1, description="A limit.")

    class Two(WeirSettings):
        shared_limit: int = Field(default=2, description="Another limit.")

    [row] = rows([Owner(One, ("one",), "`[one]`"), Owner(Two, ("two",), "`[two]`")])
    rendered = render([Owner(One, ("one",), "`[one]`"), Owner(Two, ("two",), "`[two]`")])
    assert row.services == ["one", "two"]
    assert "| `SHARED_LIMIT` | one: `1`; two: `2` | `[one]`, `[two]` | one, two | " in rendered
    assert "one: A limit; two: Another limit. |" in rendered


def test_the_table_goes_between_the_markers() -> None:
    text = f"before\n{BEGIN}\nold\n{END}\nafter\n"
    assert replace_table(text, "| new |\n") == f"before\n{BEGIN}\n| new |\n{END}\nafter\n"
