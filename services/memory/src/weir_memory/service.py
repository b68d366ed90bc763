"""Memory logic: what the model gets to know for a turn, and remembering finished turns.

Short-term memory is the conversation itself (a window of recent turns plus a summary of the
older ones). Long-term memory, when enabled, adds the user's preferences, recalled memories
and past sessions. Private turns stay in short-term memory only: nothing about them reaches
long-term memory or preferences (F38).
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

import structlog

from weir_common.events import (
    ConversationTitled,
    MemoryContext,
    MemoryContextRequested,
    Turn,
    TurnCompleted,
)

from . import context
from .longterm.service import LongTermMemory, Recollection
from .longterm.text import is_chinese
from .repository import ShortTermStore
from .sessions.recall import Focus
from .summary import Summarizer

log = structlog.get_logger(__name__)

T = TypeVar("T")


async def _none(value: T) -> T:
    """`value`, awaitable: a read there is nothing to read for."""
    return value


FOCUS = "recall_focus"
FOCUS_TURN = "recall_focus_turn"
#: How many turns after an explicit recall a short "xxx 呢？" still refers to that session.
FOLLOW_UP_TURNS = 3


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
        analysis_wait_s: float = 5.0,
    ) -> None:
        self.stm = stm
        self._analysis_wait_s = analysis_wait_s
        self.long_term = long_term
        self._summarizer = summarizer
        self._window = window
        self._discard = discard

    async def build_context(self, cmd: MemoryContextRequested) -> MemoryContext:
        """The context of the next turn: recent turns, summary, and what is remembered.

        The prompt's session summary is the compression summary once there is one, the
        session's rolling summary before (the first `window` turns). A private request reads
        memories without marking them as accessed."""
        cid = cmd.conversation_id
        history, summary, found = await asyncio.gather(  # short- and long-term at once
            self.stm.recent(cid) if cid else _none([]),
            self.stm.summary(cid) if cid else _none(None),
            self._recollect(cmd),
        )
        chinese = is_chinese(cmd.query)
        recall = context.recall_block(found.recall, chinese)
        return MemoryContext(
            history=history[-self._window :],
            summary=summary,
            facts=[*found.preference_lines, *found.told, *context.untold(
                found.recall.lines[:5] if found.recall else [], found.told)],
            preferences=found.preferences,
            recall=recall,
            prompt=context.render(
                preferences=found.preferences,
                memories=found.memories,
                searched=found.searched,
                summary=summary or found.session_summary,
                recall=recall,
                chinese=chinese,
            ),
        )  # fmt: skip

    async def _recollect(self, cmd: MemoryContextRequested) -> Recollection:
        """What long-term memory holds for the turn (nothing without it or a user)."""
        cid = cmd.conversation_id
        if self.long_term is None or not cmd.user_id:
            return Recollection()
        pending = getattr(self.long_term, "pending", None)
        if pending is not None:  # the user's earlier turns elsewhere are analysed first
            await pending.settled(cmd.user_id, self._analysis_wait_s, cid)
        focus = await self._focus(cid) if cid else None
        found = await self.long_term.recollect(
            cmd.user_id, cid, cmd.query, focus, touch=not cmd.private
        )
        if cid and found.recall and found.recall.focus:
            await self._set_focus(cid, found.recall.focus)
        return found

    async def _focus(self, conversation_id: str) -> Focus | None:
        """The session recalled last; fresh for `FOLLOW_UP_TURNS` turns after the recall."""
        session = await self.stm.note(conversation_id, FOCUS)
        if session is None:
            return None
        at = await self.stm.note(conversation_id, FOCUS_TURN)
        turns = await self.stm.turn_count(conversation_id)
        fresh = at is not None and at.isdigit() and turns - int(at) <= FOLLOW_UP_TURNS
        return Focus(session, fresh)

    async def _set_focus(self, conversation_id: str, session: str) -> None:
        await self.stm.set_note(conversation_id, FOCUS, session)
        turns = await self.stm.turn_count(conversation_id)
        await self.stm.set_note(conversation_id, FOCUS_TURN, str(turns))

    async def record_turn(self, cmd: TurnCompleted, conversation_id: str) -> bool:
        """Remember a finished turn; False when this run's turn was already stored, or when
        the turn happened before its user was forgotten (then nothing is written at all)."""
        turn = Turn(run_id=cmd.run_id or cmd.event_id, user=cmd.user_text,
                    assistant=cmd.assistant_text, private=cmd.private)  # fmt: skip
        lt, user_id = self.long_term, cmd.user_id
        if lt is None or not user_id:
            added, _ = await self._store_turn(conversation_id, turn, user_id)
            return added
        due: list[str] = []
        written = False
        async with lt.writing(user_id, cmd.occurred_at) as admitted:
            if not admitted:
                log.info("turn.forgotten", conversation_id=conversation_id, run_id=turn.run_id,
                         user_id=user_id)  # fmt: skip
                return False
            added, recent = await self._store_turn(conversation_id, turn, user_id)
            if lt.conversations is not None:
                await lt.conversations.add_turn(cmd, conversation_id, cmd.occurred_at)
            if not cmd.private:
                lt.offer_chat(turn.user, cmd.message_vector)  # the router's vector of it
                before = [t for t in recent[:-1] if not t.private]  # private turns stay unread
                pending = getattr(lt, "pending", None)  # a stand-in may have none
                if pending is not None:  # analysed later by the `AnalysisWorker`
                    await pending.add(user_id, conversation_id, turn, cmd.occurred_at, before)
                else:
                    due = await lt.write_turn(
                        user_id, conversation_id, turn, cmd.occurred_at, before
                    )
                    written = True
        if written:
            await lt.index_log()
        if due:
            await lt.consolidator.run(user_id, due)
        return added

    async def title(self, cmd: TurnCompleted, conversation_id: str) -> ConversationTitled | None:
        """The automatic title of the turn's conversation, when this turn gave it one."""
        lt = self.long_term
        if lt is None or lt.conversations is None or not cmd.user_id:
            return None
        titled = await lt.conversations.title_if_untitled(cmd.user_id, conversation_id)
        if titled is None:
            return None
        return ConversationTitled(
            client_conversation_id=titled.client_id, title=titled.title, **cmd.envelope()
        )

    async def _store_turn(
        self, conversation_id: str, turn: Turn, user_id: str | None
    ) -> tuple[bool, list[Turn]]:
        """Short-term part of a turn: append it, compress past the window; the turns kept."""
        added = await self.stm.append(conversation_id, turn, user_id)
        recent = await self._compress(conversation_id)
        log.info("turn.stored", conversation_id=conversation_id, run_id=turn.run_id,
                 added=added, private=turn.private)  # fmt: skip
        return added, recent

    async def _compress(self, conversation_id: str) -> list[Turn]:
        """Seed 002: past the window, the oldest turns become part of the summary."""
        turns = await self.stm.recent(conversation_id)
        if len(turns) <= self._window:
            return turns
        dropped = turns[: self._discard]
        previous = await self.stm.summary(conversation_id)
        shared = [t for t in dropped if not t.private]  # a private turn leaves no summary
        summary = await self._summarizer.compress(previous, shared) if shared else previous or ""
        await self.stm.compress(conversation_id, len(dropped), summary)
        log.info("stm.compressed", conversation_id=conversation_id, dropped=len(dropped))
        return turns[len(dropped) :]
