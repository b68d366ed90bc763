"""Settings: MCP servers from JSON or TOML, validated; secrets stay secret."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from weir_tools.settings import ServerConfig, ToolsSettings


@pytest.mark.unit
def test_default_server_is_mcp_server_time_on_this_interpreter() -> None:
    (server,) = ToolsSettings().mcp_servers
    assert (server.name, server.transport) == ("time", "stdio")
    assert (server.command, server.args) == (sys.executable, ["-m", "mcp_server_time"])


@pytest.mark.unit
def test_servers_from_json_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    servers = [
        {"name": "fs", "command": "npx", "args": ["server-filesystem", "/tmp"], "timeout_s": 5},
        {"name": "ops", "transport": "streamable_http", "url": "http://127.0.0.1:3001/mcp"},
    ]
    monkeypatch.setenv("MCP_SERVERS", json.dumps(servers))
    monkeypatch.setenv("WEATHER_API_KEY", "k-123")
    settings = ToolsSettings()
    assert [s.name for s in settings.mcp_servers] == ["fs", "ops"]
    assert settings.mcp_servers[0].timeout_s == 5
    assert settings.mcp_servers[1].transport == "streamable_http"
    assert "k-123" not in repr(settings)
    assert settings.weather().api_key is not None


@pytest.mark.unit
def test_servers_from_the_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "weir.toml"
    config.write_text(
        '[[tools.mcp_servers]]\nname = "remote"\ntransport = "sse"\n'
        'url = "http://127.0.0.1:3001/sse"\n'
    )
    monkeypatch.setenv("WEIR_CONFIG", str(config))
    (server,) = ToolsSettings().mcp_servers
    assert (server.name, server.transport, server.url) == (
        "remote",
        "sse",
        "http://127.0.0.1:3001/sse",
    )


@pytest.mark.unit
def test_a_server_needs_what_its_transport_needs() -> None:
    with pytest.raises(ValidationError, match="stdio needs a command"):
        ServerConfig(name="x")
    with pytest.raises(ValidationError, match="streamable_http needs a url"):
        ServerConfig(name="x", transport="streamable_http")
    with pytest.raises(ValidationError, match="name"):
        ServerConfig(name="bad name", command="x")
