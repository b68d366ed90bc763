"""Memory logic: what the model gets to know for a turn, and remembering finished turns.

Short-term memory is the conversation itself (a window of recent turns plus a summary of the
older ones). Long-term memory, when enabled, adds the user's preferences, recalled memories
and past sessions. Private turns stay in short-term memory only: nothing about them reaches
long-term memory or preferences (F38).
"""

from __future__ import annotations

import structlog

from weir_common.events import MemoryContext, MemoryContextRequested, Turn, TurnCompleted

from . import context
from .long_term import LongTermMemory, Recollection
from .longterm.vectors import is_chinese
from .repository import ShortTermStore
from .summary import Summarizer

log = structlog.get_logger(__name__)
FOCUS = "recall_focus"


class MemoryService:
    """Short-term memory, and long-term memory when it is configured."""

    def __init__(
        self,
        stm: ShortTermStore,
        summarizer: Summarizer,
        *,
        window: int,
        discard: int,
        long_term: LongTermMemory | None = None,
    ) -> None:
        self.stm = stm
        self.long_term = long_term
        self._summarizer = summarizer
        self._window = window
        self._discard = discard

    async def build_context(self, cmd: MemoryContextRequested) -> MemoryContext:
        """The context of the next turn: recent turns, summary, and what is remembered."""
        cid = cmd.conversation_id
        history = await self.stm.recent(cid) if cid else []
        summary = await self.stm.summary(cid) if cid else None
        found = Recollection()
        if self.long_term is not None and cmd.user_id:
            focus = await self.stm.note(cid, FOCUS) if cid else None
            found = await self.long_term.recollect(cmd.user_id, cid, cmd.query, focus)
            if cid and found.recall and found.recall.focus:
                await self.stm.set_note(cid, FOCUS, found.recall.focus)
        chinese = is_chinese(cmd.query)
        recall = context.recall_block(found.recall, chinese)
        return MemoryContext(
            history=history[-self._window :],
            summary=summary,
            facts=[*found.preference_lines, *found.memories, *(found.recall.lines[:5]
                   if found.recall else [])],
            preferences=found.preferences,
            recall=recall,
            prompt=context.render(
                preferences=found.preferences,
                memories=found.memories,
                summary=summary,
                recall=recall,
                chinese=chinese,
            ),
        )  # fmt: skip

    async def record_turn(self, cmd: TurnCompleted, conversation_id: str) -> bool:
        """Remember a finished turn; False when this run's turn was already stored."""
        turn = Turn(run_id=cmd.run_id or cmd.event_id, user=cmd.user_text,
                    assistant=cmd.assistant_text)  # fmt: skip
        added = await self.stm.append(conversation_id, turn, cmd.user_id)
        recent = await self._compress(conversation_id)
        log.info("turn.stored", conversation_id=conversation_id, run_id=turn.run_id,
                 added=added, private=cmd.private)  # fmt: skip
        if self.long_term is not None and cmd.user_id and not cmd.private:
            await self.long_term.remember(
                cmd.user_id, conversation_id, turn, cmd.occurred_at, recent[:-1]
            )
        return added

    async def _compress(self, conversation_id: str) -> list[Turn]:
        """Seed 002: past the window, the oldest turns become part of the summary."""
        turns = await self.stm.recent(conversation_id)
        if len(turns) <= self._window:
            return turns
        dropped = turns[: self._discard]
        previous = await self.stm.summary(conversation_id)
        summary = await self._summarizer.compress(previous, dropped)
        await self.stm.compress(conversation_id, len(dropped), summary)
        log.info("stm.compressed", conversation_id=conversation_id, dropped=len(dropped))
        return turns[len(dropped) :]
