"""Gateway settings: its reply topic, limits, who the user is."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, SecretStr

from weir_common.settings import WeirSettings


class GatewaySettings(WeirSettings):
    """The edge: WebSocket and HTTP in front of the event bus."""

    service_name: ClassVar[str] = "gateway"

    service_port: int = 8000
    instance_id: str = Field(default="local", description="Names this instance's reply topic.")
    max_frame_bytes: int = Field(default=64 * 1024, description="Largest accepted client frame.")
    max_message_chars: int = Field(default=8000, description="Longest accepted chat message.")
    default_user: str = Field(default="anonymous", description="User when none is given.")
    auth_tokens: SecretStr = Field(
        default=SecretStr(""), description='Bearer tokens: "token=user[:admin],...".'
    )
    weir_rag_url: str | None = Field(
        default=None, description="The rag service's internal API (set by the launcher)."
    )
    run_deadline_s: float = Field(
        default=300.0, description="A run with no answer by then gets an `error` frame."
    )
    quiet_run_check_s: float = Field(
        default=10.0, description="A run with no reply this long is looked up in its record."
    )
    resume_poll_s: float = Field(
        default=1.0, description="How often a resumed run's record is read until it ends."
    )
    resume_grace_s: float = Field(
        default=10.0,
        description="How long a resume waits for a just-accepted run to be recorded.",
    )
    resume_wait_s: float = Field(
        default=60.0, description="How long a resume waits for an unavailable harness."
    )
    resume_tail_s: float = Field(
        default=15.0,
        description="How long a resumed run's pieces are read back before its record ends it.",
    )
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, description="Largest upload.")
    upload_wait_s: float = Field(default=120.0, description="How long `?wait=true` waits.")
    trust_user_headers: bool = Field(
        default=True, description="Believe X-User-Id / X-User-Role from an upstream proxy."
    )
