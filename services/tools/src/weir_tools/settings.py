"""Settings of the tools service (layered like every service: defaults < TOML < env).

MCP servers are a list: `MCP_SERVERS` as JSON in the environment, or `[[tools.mcp_servers]]`
tables in `weir.toml`. API keys are secrets and come from the environment only.
"""

from __future__ import annotations

import sys
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from weir_common.settings import WeirSettings

Transport = Literal["stdio", "sse", "streamable_http"]


class ServerConfig(BaseModel):
    """One MCP server: how to reach it and how long to wait for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", examples=["time"])
    transport: Transport = "stdio"
    command: str | None = Field(default=None, description="stdio: the executable to start.")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments.")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: extra variables.")
    cwd: str | None = None
    url: str | None = Field(default=None, description="sse / streamable_http: the endpoint.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers to send.")
    timeout_s: float = Field(default=15.0, gt=0, description="Connect and tools/list limit.")
    confirm: bool | None = Field(
        default=None,
        description="true: every tool of this server needs the user's approval before each "
        "call; false: none does; unset: each tool's MCP annotations decide (weir_tools.confirm).",
    )

    @model_validator(mode="after")
    def _reachable(self) -> ServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: stdio needs a command")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"server {self.name!r}: {self.transport} needs a url")
        return self


def default_servers() -> list[ServerConfig]:
    """`mcp-server-time` over stdio, run by this interpreter so no PATH lookup is needed."""
    return [ServerConfig(name="time", command=sys.executable, args=["-m", "mcp_server_time"])]


class HttpProvider(BaseModel):
    """An HTTP endpoint behind a built-in tool; `url_template` takes `{query}`-style fields."""

    model_config = ConfigDict(frozen=True)

    name: str
    url_template: str | None
    api_key: SecretStr | None = None
    api_key_header: str | None = None
    setting: str = Field(description="The variable that configures it, for error messages.")


class ToolsSettings(WeirSettings):
    """MCP servers, built-in tool providers, and where call results are kept."""

    service_name: ClassVar[str] = "tools"

    mcp_servers: list[ServerConfig] = Field(default_factory=default_servers)
    tools_confirm: list[str] = Field(
        default_factory=list,
        description="Tools that always need the user's approval before each call (names as "
        "exposed or `<server>.<tool>`).",
        examples=[["restart_service"]],
    )
    tools_no_confirm: list[str] = Field(
        default_factory=list,
        description="Tools that never need approval, whatever their annotations say.",
    )
    reconnect_backoff_s: float = Field(
        default=1.0, ge=0, description="Least time between two connect attempts to one server."
    )
    catalog_interval_s: float = Field(
        default=30.0, gt=0, description="Seconds between catalogue refreshes and publications."
    )
    max_result_chars: int = Field(default=20_000, ge=100, description="Longer results are cut.")
    max_concurrency: int = Field(default=16, ge=1, description="Calls handled at once.")
    redis_url: str | None = Field(
        default=None, description="Stored call results; unset: an in-process LRU."
    )
    result_ttl_s: int = Field(default=86_400, ge=1, description="How long results are kept.")
    weather_url_template: str | None = Field(
        default=None, examples=["https://api.example.com/weather?q={city}&key={api_key}"]
    )
    weather_api_key: SecretStr | None = None
    weather_api_key_header: str | None = None
    search_url_template: str | None = Field(
        default=None, examples=["https://api.example.com/search?q={query}&count={max_results}"]
    )
    search_api_key: SecretStr | None = None
    search_api_key_header: str | None = Field(default=None, examples=["X-Subscription-Token"])
    weir_rag_url: str | None = Field(
        default=None, description="The rag service; unset: the knowledge base is not connected."
    )

    def weather(self) -> HttpProvider:
        """The weather provider as configured (possibly not at all)."""
        return HttpProvider(
            name="weather",
            url_template=self.weather_url_template,
            api_key=self.weather_api_key,
            api_key_header=self.weather_api_key_header,
            setting="WEATHER_URL_TEMPLATE",
        )

    def search(self) -> HttpProvider:
        """The web search provider as configured (possibly not at all)."""
        return HttpProvider(
            name="web_search",
            url_template=self.search_url_template,
            api_key=self.search_api_key,
            api_key_header=self.search_api_key_header,
            setting="SEARCH_URL_TEMPLATE",
        )
