"""Lazy, quiet litellm import and mapping of its exceptions to :class:`LLMError`.

litellm takes seconds to import and, unless told otherwise, fetches a price list from the
network at import time. Everything here imports it on first use only.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import structlog

from weir_common.llm.types import LLMError

log = structlog.get_logger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_TYPES = frozenset(
    {
        "APITimeoutError",
        "Timeout",
        "APIConnectionError",
        "RateLimitError",
        "ServiceUnavailableError",
        "InternalServerError",
        "BadGatewayError",
        "TransportError",
        "ClientConnectionError",
        "ServerDisconnectedError",
    }
)
_CONFIG_ERROR_MARKERS = ("Missing credentials", "LLM Provider NOT provided")
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")


def import_litellm() -> Any:
    """Import litellm without network access at import and with its own chatter silenced."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm  # noqa: PLC0415 - deliberately lazy: import costs seconds

    litellm.suppress_debug_info = True
    litellm.disable_hf_tokenizer_download = True
    # litellm hands every streamed chunk to a thread for its own success logging and prices
    # the call at the end; weir registers no litellm callbacks and reads usage from the
    # stream's last chunk, so that work (a thread hop per chunk) is pure cost
    litellm.disable_streaming_logging = True
    for name in _LITELLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient_status(status: int) -> bool:
    """5xx, 408, 409, 425 and 429 may succeed on retry; other 4xx will not."""
    return status >= 500 or status in _TRANSIENT_STATUS


def logged_llm_error(event: str, model: object, exc: BaseException) -> LLMError:
    """`exc` classified (`to_llm_error`), logged as a warning `event`, ready to raise."""
    err = to_llm_error(exc)
    log.warning(event, model=model, transient=err.transient, status_code=err.status_code,
                error=err.message)  # fmt: skip
    return err


def to_llm_error(exc: BaseException) -> LLMError:
    """Classify any exception raised by a litellm call.

    Timeouts, connection errors, rate limits and 5xx are transient; authentication, bad
    request, not found and other 4xx are not. Unknown errors without a status are treated as
    transient only when they are timeouts or connection problems.
    """
    if isinstance(exc, LLMError):
        return exc
    message = f"{type(exc).__name__}: {exc}"
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = _status_of(exc)
    if any(marker in message for marker in _CONFIG_ERROR_MARKERS):
        transient = False  # litellm reports some configuration mistakes as 500s
    elif names & _TRANSIENT_TYPES or isinstance(exc, TimeoutError | ConnectionError):
        transient = True
    elif status is not None:
        transient = is_transient_status(status)
    else:
        transient = False
    return LLMError(transient, message, status)
