"""BM25 on Elasticsearch: a :class:`~weir_common.search.lexical.LexicalIndex` for a shared cluster.

One index per collection (``<prefix><collection>``), so BM25 statistics are per collection
as in the embedded index. The minimal distribution has no analysis-common module (no
``cjk``/``english`` analyzers, no stemmer, no ngram tokenizer) and no smartcn/ik plugin, so
text is analysed here (:mod:`weir_common.search.text`: jieba + Snowball English) into a
``whitespace`` field, with a ``standard`` multi-field that splits Chinese into characters
for queries whose words jieba segmented differently.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import structlog
from elasticsearch import AsyncElasticsearch, NotFoundError

from weir_common.search import text as analysis
from weir_common.search.documents import Chunk, Hit, Scope
from weir_common.search.records import (
    RECORD_FIELDS,
    from_record,
    safe_name,
    to_record,
    visible_owners,
)

log = structlog.get_logger(__name__)

#: Weight of the per-character field, used only when the query has Chinese characters.
UNIGRAM_BOOST = 0.2
DELETE_PAGE = 1000
_KEYWORD = {"type": "keyword"}
_STORED = {"type": "keyword", "index": False, "doc_values": False}
MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "chunk_id": _KEYWORD,
        "document_id": _KEYWORD,
        "collection": _KEYWORD,
        "owner": _KEYWORD,
        "source": _STORED,
        "locator": _STORED,
        "metadata": _STORED,
        "chunk_index": {"type": "integer", "index": False},
        "semantic_text": {"type": "text", "index": False},
        "raw_content": {"type": "text", "index": False},
        "body": {
            "type": "text",
            "analyzer": "whitespace",
            "fields": {"unigram": {"type": "text", "analyzer": "standard"}},
        },
    },
}
SETTINGS: dict[str, Any] = {"number_of_shards": 1, "number_of_replicas": 0}


class ElasticLexicalIndex:
    """:class:`~weir_common.search.lexical.LexicalIndex` over ``elasticsearch.AsyncElasticsearch``.

    Writes refresh before returning, so a search right after an upsert sees it.
    """

    def __init__(self, url: str, *, prefix: str = "weir-chunks-", timeout_s: float = 30.0) -> None:
        self.url = url
        self.prefix = prefix
        self._client = AsyncElasticsearch(url, request_timeout=timeout_s)
        self._known: set[str] = set()

    def index_name(self, collection: str) -> str:
        """The Elasticsearch index that holds ``collection``."""
        return f"{self.prefix}{safe_name(collection)}"

    async def open(self) -> None:
        """Check the cluster answers (health); load the Chinese dictionary."""
        # GET / is not served by the minimal distribution; cluster health is.
        health = await self._client.cluster.health()
        await asyncio.to_thread(analysis.warm_up)
        log.info("lexical.opened", engine="elasticsearch", url=self.url, status=health["status"])

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def _ensure_index(self, name: str) -> None:
        if name in self._known:
            return
        if not await self._client.indices.exists(index=name):
            try:
                await self._client.indices.create(index=name, mappings=MAPPING, settings=SETTINGS)
            except Exception as exc:  # a concurrent writer may have created it first
                if "resource_already_exists" not in str(exc):
                    raise
        self._known.add(name)

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Bulk-index chunks by ``chunk_id`` (replacing), then refresh."""
        if not chunks:
            return
        started = time.monotonic()
        operations: list[dict[str, Any]] = []
        for chunk in chunks:
            name = self.index_name(chunk.collection)
            await self._ensure_index(name)
            body = to_record(chunk) | {"body": " ".join(analysis.terms(chunk.semantic_text))}
            operations += [{"index": {"_index": name, "_id": chunk.chunk_id}}, body]
        response = await self._client.bulk(operations=operations, refresh=True)
        if response.get("errors"):
            failed = [i for i in response["items"] if i["index"].get("error")]
            raise RuntimeError(f"elasticsearch bulk failed for {len(failed)} chunks: {failed[:1]}")
        log.info("lexical.upserted", engine="elasticsearch", chunks=len(chunks),
                 seconds=round(time.monotonic() - started, 3))  # fmt: skip

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Delete the document's chunks, except `keep`, from every collection's index.

        The minimal distribution has no ``_delete_by_query`` (reindex module), so the ids are
        searched and bulk-deleted, a page at a time, until none is left.
        """
        query = {"bool": {"filter": [{"term": {"document_id": document_id}}],
                          "must_not": [self._kept(c) for c in keep]}}  # fmt: skip
        removed = 0
        while True:
            response = await self._client.search(
                index=f"{self.prefix}*", query=query,
                size=DELETE_PAGE, source=False, allow_no_indices=True, ignore_unavailable=True,
            )  # fmt: skip
            found = response["hits"]["hits"]
            if not found:
                break
            ops = [{"delete": {"_index": hit["_index"], "_id": hit["_id"]}} for hit in found]
            await self._client.bulk(operations=ops, refresh=True)
            removed += len(found)
        log.info("lexical.deleted", engine="elasticsearch", document_id=document_id, chunks=removed)
        return removed

    def _kept(self, chunk: Chunk) -> dict[str, Any]:
        """This chunk in its own collection's index (the same id elsewhere is stale)."""
        index = self.index_name(chunk.collection)
        where = [{"ids": {"values": [chunk.chunk_id]}}, {"term": {"_index": index}}]
        return {"bool": {"filter": where}}

    def _query(self, query: str, scope: Scope) -> dict[str, Any] | None:
        terms = analysis.terms(query)
        if not terms:
            return None
        should: list[dict[str, Any]] = [{"match": {"body": {"query": " ".join(terms)}}}]
        if analysis.has_cjk(query):
            should.append({"match": {"body.unigram": {"query": query, "boost": UNIGRAM_BOOST}}})
        where = [{"term": {"collection": scope.collection}},
                 {"terms": {"owner": visible_owners(scope)}}]  # fmt: skip
        return {"bool": {"should": should, "minimum_should_match": 1, "filter": where}}

    async def search(self, query: str, k: int, scope: Scope) -> list[Hit]:
        """BM25 in the collection's index, filtered to what ``scope`` may see."""
        body = self._query(query, scope)
        if body is None or k < 1:
            return []
        try:
            response = await self._client.search(
                index=self.index_name(scope.collection), query=body, size=k,
                source_includes=list(RECORD_FIELDS), track_total_hits=False,
            )  # fmt: skip
        except NotFoundError:
            return []
        return [
            Hit(chunk=from_record(hit["_source"]), score=float(hit["_score"]))
            for hit in response["hits"]["hits"]
        ]
