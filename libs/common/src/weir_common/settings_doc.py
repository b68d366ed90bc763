"""Render settings classes as one Markdown table: every setting once, by its variable.

A row is one environment variable: its default, the TOML table it belongs in, the services
that read it and what it does. A field is documented by the class that declares it (a
subclass documents only what it adds or redefines), and variables read by several classes
are merged into one row (differing defaults and descriptions are named per service).
Secrets show no default.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
SHARED_TABLE = "top level"


@dataclass(frozen=True)
class Owner:
    """A settings class, the services that read it and the TOML table its keys go in."""

    cls: type[BaseSettings]
    services: tuple[str, ...]
    table: str


@dataclass
class Row:
    """One variable, merged over every class that reads it."""

    variable: str
    defaults: dict[str, str] = field(default_factory=dict)  # services label -> default
    descriptions: dict[str, str] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)


def variable(cls: type[BaseSettings], name: str, info: FieldInfo) -> str:
    """The environment variable of one field."""
    if isinstance(info.validation_alias, str):
        return info.validation_alias.upper()
    prefix = str(cls.model_config.get("env_prefix") or "")
    return (prefix + name).upper()


def _is_secret(info: FieldInfo) -> bool:
    return "SecretStr" in repr(info.annotation)


def default_text(info: FieldInfo) -> str:
    """The default as the README shows it (secrets: none)."""
    if _is_secret(info):
        return "*secret*"
    if info.default_factory is None and info.default is PydanticUndefined:
        return "*required*"
    factory = info.default_factory
    return _shown(factory() if factory is not None else info.default)  # type: ignore[call-arg]


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, list | dict | BaseModel):
        dumped = TypeAdapter(type(value)).dump_python(value, mode="json", exclude_defaults=True)
        text = json.dumps(dumped, ensure_ascii=False)
        text = text.replace(json.dumps(sys.executable), '"python"')  # the same on every machine
    else:
        text = str(value) if value != "" else '""'
    return f"`{text}`"


def _own_fields(cls: type[BaseSettings]) -> list[str]:
    """Fields declared (or redefined) in the class body itself, in order."""
    own = inspect.get_annotations(cls)
    return [name for name in cls.model_fields if name in own]


def rows(owners: Sequence[Owner], notes: Mapping[str, str] | None = None) -> list[Row]:
    """Every variable once, in the order the owners declare them; `notes` describes the
    variables whose fields have no description."""
    merged: dict[str, Row] = {}
    for owner in owners:
        label = ", ".join(owner.services)
        for name in _own_fields(owner.cls):
            info = owner.cls.model_fields[name]
            env = variable(owner.cls, name, info)
            row = merged.setdefault(env, Row(env))
            row.defaults.setdefault(label, default_text(info))
            described = info.description or (notes or {}).get(row.variable)
            if described:
                row.descriptions.setdefault(label, described)
            if owner.table not in row.tables:
                row.tables.append(owner.table)
            row.services.extend(s for s in owner.services if s not in row.services)
    return list(merged.values())


def _per_service(values: dict[str, str], end: str = "") -> str:
    """One value, or each service's (`end` closes a list of sentences)."""
    distinct = list(dict.fromkeys(values.values()))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    trimmed = {who: value.removesuffix(end) if end else value for who, value in values.items()}
    parts = [v if w == "all" else f"{w}: {v}" for w, v in trimmed.items()]
    return "; ".join(parts) + end


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(owners: Sequence[Owner], notes: Mapping[str, str] | None = None) -> str:
    """The Markdown table of every setting."""
    lines = [
        "| variable | default | TOML table | services | what it does |",
        "|---|---|---|---|---|",
    ]
    for row in rows(owners, notes):
        services = "all" if "all" in row.services else ", ".join(row.services)
        cells = [f"`{row.variable}`", _per_service(row.defaults), ", ".join(row.tables),
                 services, _per_service(row.descriptions, ".")]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def replace_table(text: str, table: str) -> str:
    """`text` with the part between the markers replaced by `table`."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + table + text[end:]
