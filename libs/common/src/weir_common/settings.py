"""Layered settings (F44): code defaults < a TOML file < environment variables.

Secrets come from the environment only (never put them in the TOML file, which is meant to be
committed). The TOML file is `weir.toml` in the working directory, or the path in
`WEIR_CONFIG`; top-level keys apply to every service and a table named after a service
(`[harness]`, `[gateway]`...) overrides them for that service. A key is the setting's
environment variable in lower case (`LLM_MODEL` is `llm_model`).

Every settings class derives from `LayeredSettings`: the services' own (`WeirSettings`) read
their service's table; classes of a library shared by several services (the model and the
embedder settings) read the table of the service running them: `SERVICE_NAME` (the launcher
sets it), else the `weir_<name>` of `python -m weir_<name>`; none: only the top level.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from weir_common.topics import Topics

SERVICE_ENV = "SERVICE_NAME"


def running_service() -> str | None:
    """The service this process runs: `SERVICE_NAME`, else `<name>` of `python -m weir_<name>`."""
    named = os.environ.get(SERVICE_ENV)
    if named:
        return named
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    package = str(getattr(spec, "name", "")).removesuffix(".__main__")
    if package.startswith("weir_") and "." not in package:
        return package.removeprefix("weir_")
    return None


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the shared TOML file, with one table (a service's) layered on top."""

    def __init__(self, settings_cls: type[BaseSettings], table: str | None) -> None:
        super().__init__(settings_cls)
        path = Path(os.environ.get("WEIR_CONFIG", "weir.toml"))
        data: dict[str, Any] = tomllib.loads(path.read_text()) if path.is_file() else {}
        own = data.get(table, {}) if table else {}
        self._values = {
            **{k: v for k, v in data.items() if not isinstance(v, dict)},
            **(own if isinstance(own, dict) else {}),
        }

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        key = _key(field_name, field)
        return self._values.get(key.lower()), key, False

    def __call__(self) -> dict[str, Any]:
        found = {}
        for name, field in self.settings_cls.model_fields.items():
            key = _key(name, field)  # what validation accepts: the alias when there is one
            if key.lower() in self._values:
                found[key] = self._values[key.lower()]
        return found


def _key(name: str, field: FieldInfo) -> str:
    """A field's name in the file: its variable (the alias, if any) in lower case."""
    return field.validation_alias if isinstance(field.validation_alias, str) else name


class LayeredSettings(BaseSettings):
    """Defaults < the TOML file (top level, then `toml_table()`'s table) < the environment."""

    model_config = SettingsConfigDict(extra="ignore")
    #: the service whose table applies (None: the running one's, `SERVICE_NAME`)
    service_name: ClassVar[str | None] = None

    @classmethod
    def toml_table(cls) -> str | None:
        """The TOML table layered over the top level."""
        return cls.service_name or running_service()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Init arguments win, then the environment, then the TOML file, then defaults."""
        return (init_settings, env_settings, _TomlSource(settings_cls, cls.toml_table()))


class WeirSettings(LayeredSettings):
    """Settings every service shares: broker, topics, telemetry, its own HTTP port."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)
    service_name: ClassVar[str] = "weir"

    kafka_bootstrap_servers: str = Field(
        default="127.0.0.1:19092", description="The Kafka brokers (`make run` sets its own)."
    )
    topic_prefix: str = Field(default="weir.", description="Prefix of every topic's name.")
    topic_partitions: int = Field(default=3, description="Partitions of each topic created.")
    topic_replication_factor: int = Field(
        default=1, description="Replicas of each topic created (external clusters: 3)."
    )
    topic_min_insync_replicas: int | None = Field(
        default=None, description="`min.insync.replicas` of created topics (None: the broker's)."
    )
    kafka_fetch_max_wait_ms: int = Field(
        default=5000,
        description="Longest a consumer's fetch waits for new events (a long poll: the broker "
        "answers as soon as one arrives, so only an idle consumer waits it out; tansu, which "
        "does not wake a waiting fetch, gets 10 from the launcher).",
    )
    kafka_security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT",
        description="How clients reach the broker (compose and k8s: SASL_PLAINTEXT).",
    )
    kafka_sasl_mechanism: Literal["SCRAM-SHA-512", "SCRAM-SHA-256"] = Field(
        default="SCRAM-SHA-512", description="The SASL mechanism of the broker login."
    )
    kafka_sasl_username: str = Field(
        default="", description="This service's principal on the broker (its own name)."
    )
    kafka_sasl_password: SecretStr = Field(
        default=SecretStr(""), description="The SCRAM password of `kafka_sasl_username`."
    )
    service_host: str = Field(default="127.0.0.1", description="Address the HTTP server binds.")
    service_port: int = Field(
        default=0, description="Port of health and the internal API (the launcher sets it)."
    )
    otel_exporter_otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP endpoint of traces, the same on every service (unset: no span "
        "recorded or exported; trace ids still flow).",
    )
    log_level: str = Field(default="INFO", description="Least level logged.")
    log_json: bool = Field(default=True, description="One JSON object per line (else text).")
    data_dir: Path = Field(default=Path(".data"), description="Local data (files, jobs, indexes).")
    weir_service_token: SecretStr = Field(
        default=SecretStr(""),
        description="Shared secret of internal calls between services (unset: refused).",
    )

    @property
    def topics(self) -> Topics:
        """Topic names for this deployment."""
        return Topics(prefix=self.topic_prefix)
