"""Session memory (seed 001, F35): every chat and a rolling summary per session, with vectors,
and the four recall scenarios over them.

A session's vector is the sum of its chats' vectors (seed 001's `sessions.summary_embedding`),
a rolling embedding that costs no model call, kept in PostgreSQL. Chats are indexed per user
like every memory; a session is found through its chats (seed 001: chats searched, grouped
by session), so its vector is not indexed.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import structlog

from weir_common.events import Turn

from ..log.context import in_context
from ..longterm.models import Vector
from ..longterm.similarity import Similarity
from ..longterm.vector_index import UserVectorIndex, VectorHit, VectorRecord
from ..summary import chat_summary, session_summary
from .recall import RecallResult, Scenario, render_chat, render_session
from .repository import Chat, Session, SessionStore

log = structlog.get_logger(__name__)
RECENT_CHATS = 4
CHATS_PER_SESSION = 3


def _owner(user_id: str) -> str:
    return hashlib.blake2b(user_id.encode(), digest_size=6).hexdigest()


def chat_key(user_id: str, run_id: str) -> str:
    """A chat's vector id: unique per user even if two users' run ids were equal."""
    return f"c:{_owner(user_id)}:{run_id}"


def run_of(key: str) -> str:
    """The run id inside a chat's vector id."""
    return key.split(":", 2)[2]


def _group(hits: Sequence[VectorHit], max_sessions: int) -> OrderedDict[str, list[str]]:
    """The run ids of the best chats, by session: the first `max_sessions` sessions to appear,
    up to `CHATS_PER_SESSION` chats each, best first."""
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for hit in hits:
        if hit.session_id not in groups and len(groups) >= max_sessions:
            continue  # a later session: the best ones may still have chats to collect
        runs = groups.setdefault(hit.session_id, [])
        if len(runs) < CHATS_PER_SESSION:
            runs.append(run_of(hit.id))
    return groups


class SessionMemory:
    """Chats and sessions of every user; recall across them."""

    def __init__(
        self,
        store: SessionStore,
        index: UserVectorIndex,
        similarity: Similarity,
        search_limit: int,
        context_weight: float = 0.0,
    ) -> None:
        self.store = store
        self._index = index
        self._similarity = similarity
        self._search_limit = search_limit  # seed 001's vector.max_search_results
        self._context_weight = context_weight  # of the previous chat's vector (`..log.context`)

    async def record(
        self, user_id: str, conversation_id: str, turn: Turn, at: datetime, vector: Vector
    ) -> None:
        """Store a chat, roll its session's summary and vector forward, index the chat. The
        chat's vector is `vector` (its text's) leaning towards the previous chat's."""
        summary = chat_summary(turn.user, turn.assistant)
        chat = Chat(0, turn.run_id, conversation_id, turn.user, turn.assistant, summary, at)
        if not await self.store.add_chat(user_id, chat):
            return
        if self._context_weight:
            previous = await self.store.vector_before(user_id, conversation_id, turn.run_id)
            vector = in_context(vector, previous, self._context_weight)
        old = await self.store.get(user_id, conversation_id)
        recent = await self.store.latest_chats(user_id, conversation_id, RECENT_CHATS)
        title = old.title if old else summary[:80]
        total = (np.asarray(old.embedding_sum) if old and old.embedding_sum else 0.0) + np.asarray(
            vector
        )
        session = Session(
            id=0,
            conversation_id=conversation_id,
            user_id=user_id,
            title=title,
            summary=session_summary(title, [c.summary for c in recent]),
            embedding_sum=np.asarray(total).tolist(),
            chat_count=(old.chat_count if old else 0) + 1,
            created_at=old.created_at if old else at,
            updated_at=at,
        )
        await self.store.save(session)
        await self._index.upsert(
            [VectorRecord(chat_key(user_id, turn.run_id), user_id, "chat", vector, conversation_id)]
        )
        # the chat's vector in PostgreSQL marks it indexed (seed 001's chats.summary_embedding):
        # the index can be rebuilt, or a chat indexing missed be found, without the model
        await self.store.keep_chat_vectors([(user_id, turn.run_id, vector)])

    async def history(self, user_id: str, current: str | None, limit: int = 10) -> RecallResult:
        """RecallHistory: the summaries of the user's other sessions, newest first."""
        sessions = [
            s for s in await self.store.of_user(user_id, limit + 1) if s.conversation_id != current
        ]
        return RecallResult(Scenario.HISTORY, [render_session(s) for s in sessions[:limit]])

    @property
    def search_limit(self) -> int:
        """How many chats a search of past sessions looks at."""
        return self._search_limit

    async def topic(
        self, user_id: str, vector: Vector, current: str | None, max_sessions: int,
        min_similarity: float = 0.0,
    ) -> RecallResult | None:  # fmt: skip
        """RecallTopic: chats near the topic, grouped by session, the best `max_sessions`;
        None when the best chat is below `min_similarity`."""
        hits = await self._index.search(user_id, ["chat"], vector, self._search_limit)
        hits = [h for h in hits if h.session_id != current]
        if not hits or self._similarity.calibrate(hits[0].cosine) < min_similarity:
            return None
        chosen = list(_group(hits, max_sessions).items())
        chats = {c.run_id: c for c in await self.store.chats_by_run(
            user_id, [r for _, runs in chosen for r in runs])}  # fmt: skip
        sessions = await self.store.of_conversations(user_id, [c for c, _ in chosen])
        lines = []
        for conversation_id, runs in chosen:
            session = sessions.get(conversation_id)
            if session is not None:
                lines.append(render_session(session))
                lines.extend(render_chat(chats[r]) for r in runs if r in chats)
        shown = [r for _, runs in chosen for r in runs if r in chats]
        return RecallResult(
            Scenario.TOPIC, lines, focus=chosen[0][0] if chosen else None, sources=shown
        )

    async def summary(self, user_id: str, conversation_id: str) -> str | None:
        """The rolling summary of one session (None before its first chat)."""
        session = await self.store.get(user_id, conversation_id)
        return session.summary if session else None

    async def session(self, user_id: str, conversation_id: str) -> RecallResult:
        """RecallSession: one session's summary and its latest chats."""
        session = await self.store.get(user_id, conversation_id)
        if session is None:
            return RecallResult(Scenario.SESSION, [])
        chats = await self.store.latest_chats(user_id, conversation_id, 10)
        lines = [render_session(session), *(render_chat(c) for c in chats)]
        return RecallResult(
            Scenario.SESSION, lines, focus=conversation_id, sources=[c.run_id for c in chats]
        )

    async def within(self, user_id: str, conversation_id: str, vector: Vector) -> RecallResult:
        """RecallWithinSession: the chats of one session nearest to the question."""
        hits = await self._index.search(
            user_id, ["chat"], vector, min(5, self._search_limit), session_id=conversation_id
        )
        chats = await self.store.chats_by_run(user_id, [run_of(h.id) for h in hits])
        return RecallResult(
            Scenario.WITHIN,
            [render_chat(c) for c in chats],
            focus=conversation_id,
            sources=[c.run_id for c in chats],
        )

    async def by_number(self, user_id: str, number: str) -> str | None:
        """The conversation id of the user's session `#number` (or of that conversation id)."""
        for session in await self.store.of_user(user_id, limit=1000):
            if str(session.id) == number.lstrip("#") or session.conversation_id == number:
                return session.conversation_id
        return None
