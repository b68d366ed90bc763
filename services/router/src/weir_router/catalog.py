"""The router's view of the tool catalogue: the latest `tools.catalog.updated`."""

from __future__ import annotations

from weir_common.events import ToolInfo, ToolsCatalogUpdated


class Catalog:
    """Latest known tools, by name."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolInfo] = {}

    def update(self, event: ToolsCatalogUpdated) -> None:
        """Replace the catalogue with a newer one."""
        self.tools = {tool.name: tool for tool in event.tools}

    @property
    def names(self) -> set[str]:
        """Names of the connected tools."""
        return set(self.tools)
