"""Layered settings (F44): code defaults < a TOML file < environment variables.

Secrets come from the environment only (never put them in the TOML file, which is meant to be
committed). The TOML file is `weir.toml` in the working directory, or the path in
`WEIR_CONFIG`; top-level keys apply to every service and a table named after a service
(`[harness]`, `[gateway]`...) overrides them for that service.
"""

from __future__ import annotations

import os
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


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the shared TOML file, with the service's own table layered on top."""

    def __init__(self, settings_cls: type[BaseSettings], service: str) -> None:
        super().__init__(settings_cls)
        path = Path(os.environ.get("WEIR_CONFIG", "weir.toml"))
        data: dict[str, Any] = tomllib.loads(path.read_text()) if path.is_file() else {}
        own = data.get(service, {})
        self._values = {
            **{k: v for k, v in data.items() if not isinstance(v, dict)},
            **(own if isinstance(own, dict) else {}),
        }

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self._values.items() if k in self.settings_cls.model_fields}


class WeirSettings(BaseSettings):
    """Settings every service shares: broker, topics, telemetry, its own HTTP port."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)
    service_name: ClassVar[str] = "weir"

    kafka_bootstrap_servers: str = "127.0.0.1:19092"
    topic_prefix: str = "weir."
    topic_partitions: int = 3
    topic_replication_factor: int = Field(
        default=1, description="Replicas of each topic created (external clusters: 3)."
    )
    topic_min_insync_replicas: int | None = Field(
        default=None, description="`min.insync.replicas` of created topics (None: the broker's)."
    )
    kafka_fetch_max_wait_ms: int = 500
    kafka_security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT",
        description="How clients reach the broker (compose and k8s: SASL_PLAINTEXT).",
    )
    kafka_sasl_mechanism: Literal["SCRAM-SHA-512", "SCRAM-SHA-256"] = "SCRAM-SHA-512"
    kafka_sasl_username: str = Field(
        default="", description="This service's principal on the broker (its own name)."
    )
    kafka_sasl_password: SecretStr = Field(
        default=SecretStr(""), description="The SCRAM password of `kafka_sasl_username`."
    )
    service_host: str = "127.0.0.1"
    service_port: int = 0
    otel_exporter_otlp_endpoint: str | None = None
    log_level: str = "INFO"
    log_json: bool = True
    data_dir: Path = Path(".data")
    weir_service_token: SecretStr = Field(
        default=SecretStr(""),
        description="Shared secret of internal calls between services (unset: refused).",
    )

    @property
    def topics(self) -> Topics:
        """Topic names for this deployment."""
        return Topics(prefix=self.topic_prefix)

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
        return (init_settings, env_settings, _TomlSource(settings_cls, cls.service_name))
