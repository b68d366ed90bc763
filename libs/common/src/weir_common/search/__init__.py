"""Search engine code shared by the services that search: rag (documents) and memory.

- :mod:`.text`: the one CJK character class, and CJK-aware analysis for BM25 (jieba +
  Snowball English).
- :mod:`.similarity`: cosine. :mod:`.fusion`: reciprocal rank fusion.
- :mod:`.vectors`: the vector index protocol, its records and filters; adapters in
  :mod:`.inprocess_vectors` (in-process) and :mod:`.milvus` (Milvus / Milvus Lite).
- :mod:`.documents`: chunks, hits and scopes of the document indexes; :mod:`.lexical`: the
  lexical (BM25) index protocol; adapters in :mod:`.tantivy_index` and :mod:`.elastic`.

Adapters import their engine clients, so import them from their own modules.
"""
