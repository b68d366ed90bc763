"""What this deployment can reach right now: the knowledge base, and which tools (F03, F04).

The tools service publishes its whole catalogue as `tools.catalog.updated`; every harness
instance keeps the latest one. The status goes into every answer's context, so the model (or
the offline responder) says plainly what it could not use instead of inventing data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from weir_common.events import Route, ServerStatus, ToolInfo, ToolsCatalogUpdated


@dataclass
class Capabilities:
    """The latest known capabilities."""

    rag: bool = False
    tools: dict[str, ToolInfo] = field(default_factory=dict)
    servers: list[ServerStatus] = field(default_factory=list)

    def update(self, catalog: ToolsCatalogUpdated) -> None:
        """Replace the tool catalogue with a newer one."""
        self.tools = {tool.name: tool for tool in catalog.tools}
        self.servers = list(catalog.servers)

    @property
    def has_tools(self) -> bool:
        """True when at least one tool can be called."""
        return bool(self.tools)

    def status(self, route: Route | None) -> list[str]:
        """The capability status for one answer: what is connected, what the route lacks."""
        notes = [
            "Knowledge base: connected." if self.rag else "Knowledge base: not connected.",
            f"Tools: {', '.join(sorted(self.tools))}." if self.tools else "Tools: none connected.",
        ]
        down = [s.name for s in self.servers if not s.connected]
        if down:
            notes.append(f"Tool servers unavailable: {', '.join(down)}.")
        if route is Route.RAG and not self.rag:
            notes.append(
                "The knowledge base is not connected: no documents were searched for this answer."
            )
        if route in (Route.SINGLE_TOOL, Route.REACT) and not self.tools:
            notes.append(
                "No tools are connected: no live data can be fetched and no action can be taken."
            )
        return notes
