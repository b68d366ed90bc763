"""Conversations (F07): created by their first turn or by the API, titled after the first
turn (never over a title the user set), renamed, deleted."""

from __future__ import annotations

from datetime import datetime, timedelta

import structlog

from weir_common.events import TurnCompleted

from ..flash import Flash
from ..log.index import LexicalLog
from ..longterm.vector_index import UserVectorIndex
from ..sessions.service import chat_key
from .repository import Conversation, ConversationStore, StoredTurn, decode_cursor, encode_cursor
from .title import first_words, make_title

log = structlog.get_logger(__name__)


class Conversations:
    """A user's conversations over `store`; titles from `flash` (or the first words)."""

    def __init__(
        self,
        store: ConversationStore,
        flash: Flash,
        index: UserVectorIndex,
        lexical: LexicalLog | None = None,
    ) -> None:
        self.store = store
        self._flash = flash
        self._index = index
        self._lexical = lexical  # the turn log's words: removed first, the rows name them

    async def create(
        self, user_id: str, conversation_id: str, client_id: str, title: str, at: datetime
    ) -> Conversation | None:
        """A new conversation (or the existing one of that id); None when it was deleted."""
        return await self.store.create(user_id, conversation_id, client_id, title, at)

    async def page(
        self, user_id: str, limit: int, before: str | None
    ) -> tuple[list[Conversation], str | None]:
        """One page of the user's conversations, recent first, and the cursor of the next
        page (None on the last). ValueError on a cursor that is not one of ours."""
        found = await self.store.of_user(
            user_id, limit + 1, decode_cursor(before) if before else None
        )
        page = found[:limit]
        return page, encode_cursor(page[-1]) if len(found) > limit else None

    async def rename(self, user_id: str, conversation_id: str, title: str) -> Conversation | None:
        """The user's title, never overwritten by an automatic one; None: no conversation."""
        if not await self.store.set_title(user_id, conversation_id, title, "user"):
            return None
        return await self.store.get(user_id, conversation_id)

    async def prune_private(self, ttl_s: float, now: datetime) -> int:
        """Private turns live as long as the short-term window keeps them (`ttl_s`)."""
        pruned = await self.store.prune_private(now - timedelta(seconds=ttl_s))
        if pruned:
            log.info("conversations.private_pruned", turns=pruned)
        return pruned

    async def delete(self, user_id: str, conversation_id: str, at: datetime) -> bool:
        """Delete the conversation and what memory keeps of it (its turns, chats, session and
        the chats' vectors); idempotent. True when it existed."""
        if self._lexical is not None:
            await self._lexical.forget_conversation(user_id, conversation_id)
        existed, runs = await self.store.delete(user_id, conversation_id, at)
        keys = [chat_key(user_id, r) for r in runs]
        await self._index.delete(user_id, keys)
        log.info("conversation.deleted", user_id=user_id, conversation_id=conversation_id,
                 existed=existed, chats=len(runs))  # fmt: skip
        return existed

    async def add_turn(self, cmd: TurnCompleted, conversation_id: str, at: datetime) -> bool:
        """Store a finished turn in its conversation (created on its first turn); False when
        it was stored before or the conversation was deleted."""
        if not cmd.user_id:
            return False
        turn = StoredTurn(
            run_id=cmd.run_id or cmd.event_id,
            user_text=cmd.user_text,
            assistant_text=cmd.assistant_text,
            created_at=at,
            private=cmd.private,
            sources=[p.model_dump(exclude={"text"}) for p in cmd.sources],
            observations=[o.model_dump() for o in cmd.observations],
            route=cmd.route,
        )
        client_id = cmd.client_conversation_id or conversation_id
        return await self.store.add_turn(cmd.user_id, conversation_id, client_id, turn)

    async def title_if_untitled(self, user_id: str, conversation_id: str) -> Conversation | None:
        """Give an untitled conversation its automatic title from its first message; the
        conversation when this call titled it, None otherwise (titled already, by the user
        or by an earlier delivery of the same turn)."""
        found = await self.store.get(user_id, conversation_id)
        if found is None or found.title:
            return None
        turns = await self.store.turns(user_id, conversation_id)
        if not turns:
            return None
        first = turns[0]
        # a private turn leaves no summary (F38), not even a title: its own first words
        if first.private:
            title = first_words(first.user_text) or "…"
        else:
            title = await make_title(self._flash, first.user_text)
        if not await self.store.set_title(user_id, conversation_id, title, "auto"):
            return None
        log.info("conversation.titled", user_id=user_id, conversation_id=conversation_id)
        return await self.store.get(user_id, conversation_id)
