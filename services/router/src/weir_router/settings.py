"""Router settings: concurrency, how answer deltas are coalesced, the model profiles."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from weir_common.settings import WeirSettings


class RouterSettings(WeirSettings):
    """The router makes every model-facing decision: route, plan, answer."""

    service_name: ClassVar[str] = "router"

    max_concurrent_generations: int = Field(default=32, ge=1)
    delta_max_chars: int = Field(default=48, ge=1, description="Flush a delta at this size...")
    delta_max_delay_s: float = Field(default=0.03, gt=0, description="...or after this long.")
    offline_chunk_chars: int = Field(default=24, ge=1)
    planner_max_tools: int = Field(default=12, ge=1, description="Tools shown to the model.")
    tool_min_score: float = Field(
        default=0.075,
        description="Least catalogue score (message-tool similarity, adjusted) for a tool to fit "
        "a message: the route step sends the turn to the tool route above it, and the offline "
        "planner picks the same tool. Chosen on half of BFCL (bench/tool_selection.py).",
    )
