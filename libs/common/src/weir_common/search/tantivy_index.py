"""Embedded BM25 on tantivy: the zero-setup :class:`~weir_common.search.lexical.LexicalIndex`.

One index folder per collection under ``<data_dir>/tantivy/<collection>``, each with a single
writer held by this object (tantivy allows one writer per index, so one process owns the
folder). Text is segmented for Chinese first (jieba), then tantivy's English stemming
analyzer runs; queries go through the same two steps.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path

import structlog
import tantivy

from weir_common.errors import TransientError
from weir_common.search import text as analysis
from weir_common.search.documents import Chunk, Hit, Scope
from weir_common.search.records import from_record, safe_name, to_record, visible_owners

log = structlog.get_logger(__name__)

TOKENIZER = "weir_en_stem"
_LOCK_BUSY = "LockBusy"


class IndexBusyError(TransientError):
    """Another process (a predecessor still shutting down, or a second replica) holds the
    index's writer lock: the write succeeds once it lets go."""


WRITER_HEAP_BYTES = 64_000_000


def _analyzer() -> tantivy.TextAnalyzer:
    """tantivy's ``en_stem`` chain: simple tokens, drop > 40 bytes, lower-case, stem."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(analysis.MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in ("chunk_id", "document_id", "collection", "owner"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("body", stored=False, tokenizer_name=TOKENIZER)
    builder.add_bytes_field("payload", stored=True, indexed=False)
    return builder.build()


class _Shard:
    """One collection's index, its writer and its lock (writes and reloads serialised).

    The writer (and the folder's writer lock) is taken on the first write, so a process
    that only searches never blocks the one that writes; it reloads before each search.
    """

    def __init__(self, path: Path, analyzer: tantivy.TextAnalyzer) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(_schema(), path=str(path))
        self.index.register_tokenizer(TOKENIZER, analyzer)
        self._writer: tantivy.IndexWriter | None = None
        self.lock = asyncio.Lock()

    @property
    def writer(self) -> tantivy.IndexWriter:
        """This process's single writer of the index (created on first use)."""
        if self._writer is None:
            try:
                self._writer = self.index.writer(WRITER_HEAP_BYTES, 1)
            except ValueError as exc:
                if _LOCK_BUSY in str(exc):
                    raise IndexBusyError(str(exc)) from exc
                raise
        return self._writer

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        self._add(chunks)
        self._commit()

    def _add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            self.writer.delete_documents_by_term("chunk_id", chunk.chunk_id)
            doc = tantivy.Document()
            doc.add_text("chunk_id", chunk.chunk_id)
            doc.add_text("document_id", chunk.document_id)
            doc.add_text("collection", chunk.collection)
            doc.add_text("owner", chunk.owner or "")
            doc.add_text("body", analysis.segment(chunk.semantic_text))
            doc.add_bytes("payload", json.dumps(to_record(chunk), ensure_ascii=False).encode())
            self.writer.add_document(doc)

    def delete_document(self, document_id: str, keep: Sequence[Chunk]) -> int:
        """Delete the document's chunks and write `keep` again, in one (atomic) commit."""
        query = tantivy.Query.term_query(self.index.schema, "document_id", document_id)
        result = self.index.searcher().search(query, limit=1, count=True)
        count = getattr(result, "count", 0) or 0  # present at run time, missing in the stub
        if count:
            self.writer.delete_documents_by_term("document_id", document_id)
            self._add(keep)
            self._commit()
        return max(int(count) - len(keep), 0)

    def _commit(self) -> None:
        self.writer.commit()
        self.index.reload()

    def search(self, terms: list[str], k: int, scope: Scope) -> list[Hit]:
        schema = self.index.schema
        text = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in terms]
        )
        owners = tantivy.Query.term_set_query(schema, "owner", visible_owners(scope))
        where = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "collection", scope.collection)),
             (tantivy.Occur.Must, owners)]
        )  # fmt: skip
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text),
             (tantivy.Occur.Must, tantivy.Query.const_score_query(where, 0.0))]
        )  # fmt: skip
        if self._writer is None:  # another process may have committed since
            self.index.reload()
        searcher = self.index.searcher()
        hits = []
        for score, address in searcher.search(query, limit=k, count=False).hits:
            payload = searcher.doc(address)["payload"][0]
            hits.append(Hit(chunk=from_record(json.loads(bytes(payload))), score=float(score)))
        return hits


class TantivyLexicalIndex:
    """:class:`~weir_common.search.lexical.LexicalIndex` over embedded tantivy indexes on disk."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._analyzer = _analyzer()
        self._shards: dict[str, _Shard] = {}

    def _folder(self, collection: str) -> Path:
        return self.root / safe_name(collection)

    def _shard(self, collection: str, *, create: bool) -> _Shard | None:
        name = safe_name(collection)
        shard = self._shards.get(name)
        if shard is None and (create or (self.root / name).is_dir()):
            shard = self._shards[name] = _Shard(self.root / name, self._analyzer)
        return shard

    async def open(self) -> None:
        """Create the root folder and load the Chinese dictionary (off the event loop)."""
        self.root.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(analysis.warm_up)
        log.info("lexical.opened", engine="tantivy", root=str(self.root))

    async def close(self) -> None:
        """Drop the writers (releases the folders' writer locks)."""
        self._shards.clear()

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Index chunks per collection; one commit per collection per call."""
        started = time.monotonic()
        by_collection: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            by_collection.setdefault(chunk.collection, []).append(chunk)
        for collection, group in by_collection.items():
            shard = self._shard(collection, create=True)
            assert shard is not None
            async with shard.lock:
                await asyncio.to_thread(shard.upsert, group)
        seconds = round(time.monotonic() - started, 3)
        log.info("lexical.upserted", engine="tantivy", chunks=len(chunks),
                 collections=len(by_collection), seconds=seconds)  # fmt: skip

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Delete the document's chunks, except `keep`, from every collection on disk."""
        folders = self.root.iterdir() if self.root.exists() else iter(())
        names = sorted(p.name for p in folders if p.is_dir())
        removed = 0
        for name in names:
            shard = self._shards.get(name) or self._shard_by_folder(name)
            async with shard.lock:
                mine = [c for c in keep if safe_name(c.collection) == name]
                removed += await asyncio.to_thread(shard.delete_document, document_id, mine)
        log.info("lexical.deleted", engine="tantivy", document_id=document_id, chunks=removed)
        return removed

    def _shard_by_folder(self, name: str) -> _Shard:
        shard = self._shards[name] = _Shard(self.root / name, self._analyzer)
        return shard

    async def search(self, query: str, k: int, scope: Scope) -> list[Hit]:
        """BM25 over the collection's index, filtered to what ``scope`` may see."""
        shard = self._shard(scope.collection, create=False)
        terms = sorted(set(self._analyzer.analyze(analysis.segment(query))))
        if shard is None or not terms or k < 1:
            return []
        return await asyncio.to_thread(shard.search, terms, k, scope)
