"""Which tools need the user's approval before each call (`ToolInfo.confirm`).

By the MCP annotations: a tool whose `destructiveHint` is true, or whose `readOnlyHint` is
not true, may change things, so it is confirmed. A tool without annotations is not known to
be read-only (the MCP spec's defaults are `readOnlyHint: false`, `destructiveHint: true`),
so it is confirmed too. The built-in tools only read and are not confirmed.

The operator overrides that, most specific first:
- `TOOLS_CONFIRM` / `TOOLS_NO_CONFIRM` (JSON lists of tool names, as exposed or as
  `<server>.<tool>`): these tools always / never need approval (`TOOLS_CONFIRM` wins when a
  name is in both);
- `confirm = true | false` on one entry of `MCP_SERVERS` (`[[tools.mcp_servers]]`): every
  tool of that server does / does not;
- otherwise the annotations decide.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mcp.types import ToolAnnotations

from weir_common.events import ToolInfo


def by_annotations(annotations: ToolAnnotations | None) -> bool:
    """True unless the annotations say the tool only reads (and do not say destructive)."""
    if annotations is None:
        return True
    if annotations.destructive_hint is True:
        return True
    return annotations.read_only_hint is not True


@dataclass(frozen=True)
class ConfirmRules:
    """The operator's lists: tool names that always / never need approval."""

    confirm: frozenset[str] = field(default_factory=frozenset)
    no_confirm: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, confirm: Iterable[str] = (), no_confirm: Iterable[str] = ()) -> ConfirmRules:
        """Rules from two name lists."""
        return cls(frozenset(confirm), frozenset(no_confirm))

    def decide(self, names: Iterable[str], default: bool) -> bool:
        """Whether a tool known by `names` (exposed, qualified) needs approval."""
        known = set(names)
        if known & self.confirm:
            return True
        if known & self.no_confirm:
            return False
        return default

    def apply(self, info: ToolInfo, default: bool, *aliases: str) -> ToolInfo:
        """`info` with its `confirm` flag decided."""
        needed = self.decide((info.name, *aliases), default)
        return info if info.confirm == needed else info.model_copy(update={"confirm": needed})
