"""The turn log's lexical index: chats as documents of one BM25 collection, one document per
conversation (so a conversation, or a user, is removed whole), owned by their user.

PostgreSQL is the source of truth: a chat is indexed after it is stored (`catch_up`, which
also finishes what a crash interrupted), and a sentinel document whose token PostgreSQL
keeps tells at start-up whether the index is the one the rows were marked against; if it
was lost or replaced, every chat is indexed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import groupby

import structlog

from weir_common.search.documents import Chunk, Scope
from weir_common.search.lexical import LexicalIndex
from weir_common.search.tantivy_index import IndexBusyError

from ..sessions.service import chat_key
from .store import LoggedChat, LogStore

log = structlog.get_logger(__name__)

COLLECTION = "memory-log"
SENTINEL_OWNER = "weir:sentinel"
CATCH_UP_BATCH = 500
BUSY_RETRY_S = 2.0


def document_id(user_id: str, conversation_id: str) -> str:
    """The lexical document of one conversation of one user."""
    digest = hashlib.blake2b(f"{user_id}\x1f{conversation_id}".encode(), digest_size=12)
    return f"log:{digest.hexdigest()}"


def to_chunk(chat: LoggedChat) -> Chunk:
    """A chat as a chunk of the log's collection."""
    return Chunk(
        chunk_id=chat_key(chat.user_id, chat.run_id),
        document_id=document_id(chat.user_id, chat.conversation_id),
        source=chat.conversation_id,
        collection=COLLECTION,
        owner=chat.user_id,
        semantic_text=chat.indexed_text,
        raw_content="",
        locator=chat.created_at.isoformat(),
        metadata={"run_id": chat.run_id},
    )


class LexicalLog:
    """BM25 over every user's chats, filled from PostgreSQL."""

    def __init__(
        self, engine: LexicalIndex, store: LogStore, name: str, clock: Callable[[], datetime]
    ) -> None:
        self.engine = engine
        self.store = store
        self._name = name  # the engine and place, e.g. `tantivy:/data/memory-log`
        self._clock = clock
        self._lock = asyncio.Lock()
        self._waiting: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Open the engine and align it with PostgreSQL. When another process still holds
        the index's writer (a predecessor shutting down), searches work at once and the
        alignment waits for the writer in the background."""
        await self.engine.open()
        try:
            await self._align()
        except IndexBusyError:
            self._wait_for_writer()

    async def _align(self) -> None:
        """Index again from PostgreSQL when this is not the index the rows were marked
        against; index what is left unindexed."""
        token = await self.store.token(self._name)
        if token is None or not await self._holds(token):
            again = await self.store.unmark_all()
            token = secrets.token_hex(16)
            sentinel = Chunk("sentinel", "sentinel", "", COLLECTION, SENTINEL_OWNER, token, "")
            await self.engine.upsert([sentinel])
            await self.store.set_token(self._name, token)
            log.info("memory.log.new_index", name=self._name, to_index=again)
        await self._catch_up()

    def _wait_for_writer(self) -> None:
        if self._waiting is None or self._waiting.done():
            log.warning("memory.log.index_busy", name=self._name, retry_s=BUSY_RETRY_S)
            self._waiting = asyncio.create_task(self._until_aligned())

    async def _until_aligned(self) -> None:
        while True:
            await asyncio.sleep(BUSY_RETRY_S)
            try:
                await self._align()
            except IndexBusyError:
                continue
            log.info("memory.log.index_taken", name=self._name)
            return

    async def _holds(self, token: str) -> bool:
        hits = await self.engine.search(token, 1, Scope(COLLECTION, SENTINEL_OWNER))
        return any(h.chunk.semantic_text == token for h in hits)

    async def close(self) -> None:
        """Stop waiting for the writer; close the engine."""
        if self._waiting is not None:
            self._waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._waiting
        await self.engine.close()

    async def catch_up(self) -> int:
        """Index every stored chat not indexed yet, in batches; how many. While another
        process holds the writer nothing is indexed here: the rows stay marked unindexed
        and are indexed once the writer is free."""
        try:
            return await self._catch_up()
        except IndexBusyError:
            self._wait_for_writer()
            return 0

    async def _catch_up(self) -> int:
        total = 0
        async with self._lock:
            while chats := await self.store.unindexed(CATCH_UP_BATCH):
                await self.engine.upsert([to_chunk(c) for c in chats])
                await self.store.mark_indexed(chats, self._clock())
                total += len(chats)
        if total:
            log.info("memory.log.indexed", chats=total)
        return total

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        """The run ids of the user's `k` best BM25 matches, best first."""
        hits = await self.engine.search(query, k, Scope(COLLECTION, user_id))
        return [h.chunk.metadata["run_id"] for h in hits if h.chunk.owner == user_id]

    async def forget_conversation(self, user_id: str, conversation_id: str) -> None:
        """Remove one conversation's chats from the index (before its rows go; a catch-up
        in flight finishes first, so it cannot write them back)."""
        async with self._lock:
            await self.engine.delete_document(document_id(user_id, conversation_id))

    async def forget_user(self, user_id: str) -> None:
        """Remove every chat of the user (before their rows go: the rows name the
        conversations)."""
        async with self._lock:
            for conversation_id in await self.store.conversations(user_id):
                await self.engine.delete_document(document_id(user_id, conversation_id))

    async def expire(self, chats: Sequence[LoggedChat]) -> None:
        """Remove these chats from the index, keeping their conversations' other chats."""

        def key(c: LoggedChat) -> tuple[str, str]:
            return c.user_id, c.conversation_id

        async with self._lock:
            await self._expire(sorted(chats, key=key), key)

    async def _expire(
        self, chats: Sequence[LoggedChat], key: Callable[[LoggedChat], tuple[str, str]]
    ) -> None:
        for (user_id, conversation_id), group in groupby(chats, key=key):
            gone = {c.run_id for c in group}
            kept = [
                to_chunk(c)
                for c in await self.store.of_conversation(user_id, conversation_id)
                if c.run_id not in gone
            ]
            await self.engine.delete_document(document_id(user_id, conversation_id), keep=kept)
