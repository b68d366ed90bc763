"""Gateway settings: its reply topic, limits, who the user is."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, SecretStr

from weir_common.settings import WeirSettings


class GatewaySettings(WeirSettings):
    """The edge: WebSocket and HTTP in front of the event bus."""

    service_name: ClassVar[str] = "gateway"

    service_port: int = 8000
    instance_id: str = Field(default="local", description="Names this instance's reply topic.")
    max_frame_bytes: int = Field(default=64 * 1024, description="Largest accepted client frame.")
    max_message_chars: int = Field(default=8000, description="Longest accepted chat message.")
    auth_mode: Literal["local", "token", "proxy"] = Field(
        default="local",
        description="local (one user, loopback only), token (bearer/JWT) or proxy (headers "
        "from trusted upstreams).",
    )
    local_user: str = Field(default="local", description="The one user of `local` mode.")
    auth_tokens: SecretStr = Field(
        default=SecretStr(""), description='Static bearer tokens: "token=user[:admin],...".'
    )
    auth_jwt_secret: SecretStr = Field(
        default=SecretStr(""), description="HS256 secret of JWT bearer tokens."
    )
    auth_jwks_url: str | None = Field(
        default=None, description="JWKS URL of the identity provider (RS256/ES256 JWTs)."
    )
    auth_jwt_audience: str | None = Field(default=None, description="Required JWT `aud`.")
    auth_jwt_issuer: str | None = Field(default=None, description="Required JWT `iss`.")
    auth_jwt_leeway_s: float = Field(default=30.0, description="Clock skew allowed on `exp`.")
    auth_role_claim: str = Field(default="role", description="JWT claim holding the role.")
    auth_admin_role: str = Field(default="admin", description="The role claim value of admins.")
    auth_proxy_trusted: str = Field(
        default="", description="Comma-separated addresses/CIDRs whose identity headers count."
    )
    auth_proxy_user_header: str = Field(default="X-User-Id", description="Proxy's user header.")
    auth_proxy_role_header: str = Field(default="X-User-Role", description="Proxy's role header.")
    ws_ticket_ttl_s: float = Field(default=30.0, description="Life of a one-use WS ticket.")
    redis_url: str | None = Field(
        default=None, description="Redis for WS tickets shared by replicas (else in-process)."
    )
    quota_redis_connections: int = Field(
        default=32, ge=1, description="Connections to Redis for quotas (more callers wait)."
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
    max_upload_files: int = Field(default=20, description="Most files in one upload request.")
    max_body_bytes: int = Field(
        default=64 * 1024 * 1024,
        description="Largest HTTP request body (refused with 413 before it is read).",
    )
    rate_limit_chat: str = Field(default="60/minute", description="Chat turns per user.")
    rate_limit_upload: str = Field(default="60/hour", description="Uploaded files per user.")
    max_inflight_runs: int = Field(
        default=8, description="Runs one user may have open at once on one gateway."
    )
    upload_wait_s: float = Field(default=120.0, description="How long `?wait=true` waits.")
