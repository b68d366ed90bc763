"""Memory logic: what the model gets to know for a turn, and remembering finished turns.

Short-term memory only for now; long-term memory (profile, facts, recall) comes later and
will fill `MemoryContext.facts` from `query`.
"""

from __future__ import annotations

import structlog

from weir_common.events import MemoryContext, Turn

from .repository import ShortTermStore

log = structlog.get_logger(__name__)


async def build_context(store: ShortTermStore, conversation_id: str, query: str) -> MemoryContext:
    """The context for the next turn of `conversation_id`: its recent turns, oldest first.

    `query` is unused until long-term recall exists; it is part of the signature because
    recall is driven by it.
    """
    history = await store.recent(conversation_id)
    return MemoryContext(history=history)


async def record_turn(store: ShortTermStore, conversation_id: str, turn: Turn) -> bool:
    """Remember a finished turn; False when this run's turn was already stored (redelivery).

    Private turns are recorded too: short-term memory is the conversation itself. Private
    mode only keeps turns out of long-term memory, which does not exist yet.
    """
    added = await store.append(conversation_id, turn)
    log.info("turn.stored", conversation_id=conversation_id, run_id=turn.run_id, added=added)
    return added
