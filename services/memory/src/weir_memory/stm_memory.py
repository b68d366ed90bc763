"""Short-term memory in this process: the zero-setup fallback, lost on restart."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from weir_common.events import Turn


@dataclass
class _Conversation:
    turns: deque[Turn]
    run_ids: set[str] = field(default_factory=set)
    count: int = 0
    expires_at: float = 0.0
    summary: str | None = None
    user_id: str | None = None
    notes: dict[str, str] = field(default_factory=dict)


class InMemoryShortTermStore:
    """Short-term memory in this process: the zero-setup fallback, lost on restart.

    Same semantics as the Redis adapter, including expiry; `clock` (seconds, monotonic) is
    injectable so tests can move time.
    """

    def __init__(
        self, *, window: int, ttl_s: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._window = window
        self._ttl_s = ttl_s
        self._clock = clock
        # Ordered by last write; with one TTL for all, that is also expiry order.
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()

    async def append(self, conversation_id: str, turn: Turn, user_id: str | None = None) -> bool:
        """Store `turn` once per run id, trim to the window and refresh the expiry."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        if conv is None:
            conv = _Conversation(turns=deque(maxlen=self._window))
            self._conversations[conversation_id] = conv
        conv.user_id = user_id or conv.user_id
        if turn.run_id in conv.run_ids:
            return False
        conv.turns.append(turn)
        conv.run_ids.add(turn.run_id)
        conv.count += 1
        conv.expires_at = self._clock() + self._ttl_s
        self._conversations.move_to_end(conversation_id)
        return True

    async def recent(self, conversation_id: str) -> list[Turn]:
        """The turns in the window, oldest first."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return list(conv.turns) if conv else []

    async def turn_count(self, conversation_id: str) -> int:
        """How many turns were ever stored in this conversation (until it expires)."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return conv.count if conv else 0

    async def summary(self, conversation_id: str) -> str | None:
        """The summary of the turns compressed out of the window."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return conv.summary if conv else None

    async def compress(self, conversation_id: str, drop: int, summary: str) -> None:
        """Drop the oldest `drop` turns and set their summary."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        if conv is None:
            return
        for _ in range(min(drop, len(conv.turns))):
            conv.turns.popleft()
        conv.summary = summary

    async def note(self, conversation_id: str, key: str) -> str | None:
        """A value kept with the conversation."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        return conv.notes.get(key) if conv else None

    async def set_note(self, conversation_id: str, key: str, value: str) -> None:
        """Keep a value with the conversation (it expires with it)."""
        self._evict_expired()
        conv = self._conversations.get(conversation_id)
        if conv is None:
            conv = _Conversation(turns=deque(maxlen=self._window))
            self._conversations[conversation_id] = conv
        conv.notes[key] = value
        conv.expires_at = self._clock() + self._ttl_s
        self._conversations.move_to_end(conversation_id)

    async def forget_user(self, user_id: str) -> int:
        """Delete all conversations of the user."""
        ids = [cid for cid, conv in self._conversations.items() if conv.user_id == user_id]
        for cid in ids:
            del self._conversations[cid]
        return len(ids)

    def _evict_expired(self) -> None:
        now = self._clock()
        while self._conversations:
            conv_id, conv = next(iter(self._conversations.items()))
            if conv.expires_at > now:
                return
            del self._conversations[conv_id]
