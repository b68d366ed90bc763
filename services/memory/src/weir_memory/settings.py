"""Settings of the memory service (layered like every service: defaults < TOML < env)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from weir_common.settings import WeirSettings


class MemorySettings(WeirSettings):
    """Where short-term memory lives and how much of a conversation it keeps.

    `redis_url` is read from `REDIS_URL` (environment names are case-insensitive).
    """

    service_name: ClassVar[str] = "memory"

    redis_url: str = Field(
        default="redis://127.0.0.1:16379/0", description="Redis for short-term memory."
    )
    stm_window_turns: int = Field(default=10, ge=1, description="Turns kept per conversation.")
    stm_ttl_s: int = Field(
        default=86_400, ge=1, description="Seconds a conversation is kept after its last turn."
    )
    stm_backend: Literal["redis", "memory"] = Field(
        default="redis", description="`memory` is the in-process, zero-setup fallback."
    )
    max_concurrency: int = Field(default=16, ge=1, description="Commands handled at once.")
