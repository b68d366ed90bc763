"""Choose the index engines from the environment (``MILVUS_URI``, ``ES_URL``, ``DATA_DIR``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from weir_common.search.lexical import LexicalIndex
from weir_common.search.lexical_factory import LexicalBackend, make_lexical
from weir_common.settings import LayeredSettings
from weir_rag.index.dense import DenseIndex, MilvusDenseIndex


class IndexSettings(LayeredSettings):
    """Where the indexes live. ``LEXICAL_BACKEND=auto`` means Elasticsearch when ``ES_URL``
    is set, else the embedded tantivy index under ``DATA_DIR/tantivy``."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")
    service_name: ClassVar[str] = "rag"

    milvus_uri: str = Field(default="http://127.0.0.1:19530", description="Milvus server.")
    milvus_collection: str = Field(default="weir_chunks", description="Collection of chunks.")
    es_url: str | None = Field(
        default=None, description="Elasticsearch for BM25 (unset: embedded tantivy)."
    )
    es_index_prefix: str = Field(default="weir-chunks-", description="Prefix of the ES indexes.")
    data_dir: Path = Path(".data")
    lexical_backend: LexicalBackend = Field(
        default="auto", description="`auto`: Elasticsearch when `ES_URL` is set, else tantivy."
    )


def make_lexical_index(settings: IndexSettings | None = None) -> LexicalIndex:
    """Elasticsearch or embedded tantivy, per :class:`IndexSettings` (nothing opened yet)."""
    s = settings if settings is not None else IndexSettings()
    return make_lexical(
        s.lexical_backend, es_url=s.es_url, es_prefix=s.es_index_prefix,
        tantivy_root=s.data_dir / "tantivy",
    )  # fmt: skip


def make_dense_index(dimension: int, settings: IndexSettings | None = None) -> DenseIndex:
    """Milvus at ``MILVUS_URI`` for vectors of ``dimension`` (nothing opened yet)."""
    s = settings if settings is not None else IndexSettings()
    return MilvusDenseIndex(s.milvus_uri, dimension, collection=s.milvus_collection)
