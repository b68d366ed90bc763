"""Which tools need the user's approval: MCP annotations, server settings, name lists."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp.types import ToolAnnotations

from weir_common.events import ToolInfo
from weir_tools.app import make_service
from weir_tools.confirm import ConfirmRules, by_annotations
from weir_tools.mcp_manager import McpManager
from weir_tools.settings import ServerConfig, ToolsSettings

from .conftest import StdioPeer, time_server


@pytest.mark.unit
@pytest.mark.parametrize(
    ("annotations", "needed"),
    [
        (None, True),  # unannotated: not known to be read-only
        (ToolAnnotations(), True),
        (ToolAnnotations(read_only_hint=True), False),
        (ToolAnnotations(read_only_hint=True, destructive_hint=False), False),
        (ToolAnnotations(read_only_hint=True, destructive_hint=True), True),  # contradictory: ask
        (ToolAnnotations(read_only_hint=False, destructive_hint=False), True),  # writes, additive
        (ToolAnnotations(read_only_hint=False, idempotent_hint=True), True),
    ],
)
def test_annotations_decide_by_default(annotations: ToolAnnotations | None, needed: bool) -> None:
    assert by_annotations(annotations) is needed


@pytest.mark.unit
def test_name_lists_override_and_confirm_wins() -> None:
    rules = ConfirmRules.of(confirm=["restart", "fs.write_file"], no_confirm=["write", "restart"])
    info = ToolInfo(name="write_file", server="fs")
    assert rules.apply(info, False, "fs.write_file").confirm is True  # qualified name
    assert rules.apply(ToolInfo(name="write", server="fs"), True).confirm is False
    assert rules.apply(ToolInfo(name="restart", server="ops"), False).confirm is True
    assert rules.apply(ToolInfo(name="other", server="x"), True).confirm is True
    assert rules.apply(ToolInfo(name="other", server="x"), False).confirm is False


@pytest.mark.unit
def test_builtins_are_read_only_unless_listed() -> None:
    settings = ToolsSettings(mcp_servers=[], tools_confirm=["weather"])
    wiring = make_service(settings)
    confirm = {t.name: t.confirm for t in wiring.service.catalog().tools}
    assert confirm == {"time": False, "weather": True, "web_search": False,
                       "knowledge_search": False}  # fmt: skip


@pytest.mark.unit
def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLS_CONFIRM", '["time"]')
    monkeypatch.setenv("MCP_SERVERS", '[{"name": "t", "command": "x", "confirm": false}]')
    settings = ToolsSettings()
    assert settings.tools_confirm == ["time"]
    assert settings.mcp_servers[0].confirm is False


@pytest.mark.integration
async def test_real_servers_annotations_and_server_setting(
    everything_stdio: Callable[[str], StdioPeer],
) -> None:
    """server-everything annotates `echo` read-only and `toggle-subscriber-updates` not;
    mcp-server-time annotates its tools read-only; a server set `confirm = true` is asked."""
    trusted = ServerConfig(**{**time_server("clock").model_dump(), "confirm": True})
    manager = McpManager(
        [everything_stdio("everything").config, time_server(), trusted],
        reserved=["time"],
        confirm=ConfirmRules.of(no_confirm=["everything.toggle-simulated-logging"]),
    )
    await manager.start()
    try:
        routes = manager.routes()
        assert routes["echo"].info.confirm is False
        assert routes["toggle-subscriber-updates"].info.confirm is True
        assert routes["toggle-simulated-logging"].info.confirm is False  # by name list
        assert routes["get_current_time"].info.confirm is False
        assert routes["clock.get_current_time"].info.confirm is True  # by the server setting
    finally:
        await manager.close()
