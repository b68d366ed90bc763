"""What this deployment can reach right now: the knowledge base, and which tools (F03, F04).

The tools service publishes its whole catalogue as `tools.catalog.updated`; every harness
instance keeps the latest one. The status goes into every answer's context, so the model (or
the offline responder) says plainly what it could not use instead of inventing data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from weir_common.events import ChatRequested, Route, ServerStatus, ToolInfo, ToolsCatalogUpdated


@dataclass
class Capabilities:
    """The latest known capabilities."""

    rag: bool = False
    tools: dict[str, ToolInfo] = field(default_factory=dict)
    servers: list[ServerStatus] = field(default_factory=list)
    turned_off: tuple[str, ...] = ()

    def for_request(self, request: ChatRequested) -> Capabilities:
        """What one run may use: the user can turn the knowledge base or the tools off for a
        turn (the web UI's control bar); the answer's context then says so."""
        off = ("knowledge",) * (not request.use_knowledge) + ("tools",) * (not request.use_tools)
        if not off:
            return self
        return replace(
            self,
            rag=self.rag and request.use_knowledge,
            tools=self.tools if request.use_tools else {},
            servers=self.servers if request.use_tools else [],
            turned_off=off,
        )

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
        if "knowledge" in self.turned_off:
            knowledge = "Knowledge base: turned off by the user for this message."
        else:
            knowledge = (
                "Knowledge base: connected." if self.rag else "Knowledge base: not connected."
            )
        if "tools" in self.turned_off:
            tools = "Tools: turned off by the user for this message."
        else:
            tools = (
                f"Tools: {', '.join(sorted(self.tools))}."
                if self.tools
                else "Tools: none connected."
            )
        notes = [knowledge, tools]
        down = [s.name for s in self.servers if not s.connected]
        if down:
            notes.append(f"Tool servers unavailable: {', '.join(down)}.")
        if route is Route.RAG and "knowledge" in self.turned_off:
            notes.append("No documents were searched: the user turned the knowledge base off.")
        elif route is Route.RAG and not self.rag:
            notes.append(
                "The knowledge base is not connected: no documents were searched for this answer."
            )
        if route in (Route.SINGLE_TOOL, Route.REACT) and "tools" in self.turned_off:
            notes.append("No tools were called: the user turned tools off for this message.")
        elif route in (Route.SINGLE_TOOL, Route.REACT) and not self.tools:
            notes.append(
                "No tools are connected: no live data can be fetched and no action can be taken."
            )
        return notes
