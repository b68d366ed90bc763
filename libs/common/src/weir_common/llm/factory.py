"""Build the configured :class:`LLMClient` (or None for the offline responder)."""

from __future__ import annotations

import structlog

from weir_common.llm.client import LiteLLMClient, LLMClient
from weir_common.llm.profiles import LLMSettings

log = structlog.get_logger(__name__)


def make_llm_client(settings: LLMSettings | None = None) -> LLMClient | None:
    """A :class:`LiteLLMClient` when a model is configured, else None (use offline mode).

    Reads :class:`LLMSettings` from the environment when ``settings`` is not given. Never
    imports litellm or touches the network.
    """
    resolved = settings if settings is not None else LLMSettings()
    if not resolved.configured:
        log.info("llm.client.offline", reason="LLM_MODEL not set")
        return None
    pro, flash = resolved.profile("pro"), resolved.profile("flash")
    log.info(
        "llm.client.configured", pro_model=pro.model, flash_model=flash.model, api_base=pro.api_base
    )
    return LiteLLMClient(resolved)
