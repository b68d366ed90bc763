"""Index interfaces (:mod:`.base`) and engine adapters: Milvus (dense), tantivy and
Elasticsearch (BM25). Adapters import their engine clients, so import them from their
modules or through :mod:`.factory`."""

from weir_rag.index.base import Chunk, DenseIndex, Hit, LexicalIndex, Scope

__all__ = ["Chunk", "DenseIndex", "Hit", "LexicalIndex", "Scope"]
