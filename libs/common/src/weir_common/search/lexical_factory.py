"""Choosing the lexical (BM25) engine: Elasticsearch when a URL is given, else embedded
tantivy in a folder; shared by every service that keeps a BM25 index (rag, memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import structlog

from weir_common.search.lexical import LexicalIndex
from weir_common.search.tantivy_index import TantivyLexicalIndex

log = structlog.get_logger(__name__)

LexicalBackend = Literal["auto", "tantivy", "elasticsearch"]


def make_lexical(
    backend: LexicalBackend, *, es_url: str | None, es_prefix: str, tantivy_root: Path
) -> LexicalIndex:
    """The engine `backend` names (`auto`: Elasticsearch when `es_url` is set, else tantivy
    under `tantivy_root`); nothing is opened yet."""
    if backend == "auto":
        backend = "elasticsearch" if es_url else "tantivy"
    if backend == "elasticsearch":
        if not es_url:
            raise ValueError("the elasticsearch lexical backend needs ES_URL")
        log.info("lexical.selected", engine="elasticsearch", url=es_url, prefix=es_prefix)
        # imported only when chosen: the client costs ~1 s of CPU at every service start
        from weir_common.search.elastic import ElasticLexicalIndex  # noqa: PLC0415

        return ElasticLexicalIndex(es_url, prefix=es_prefix)
    log.info("lexical.selected", engine="tantivy", root=str(tantivy_root))
    return TantivyLexicalIndex(tantivy_root)
