"""Rag's indexes: dense vectors of chunks (:mod:`.dense`, on the shared Milvus adapter) and
the shared lexical adapters (:mod:`weir_common.search.lexical`), chosen by :mod:`.factory`."""
