"""Round trips against the real engines of the session stack."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from pymilvus import MilvusClient

from weir_common.engines import MILVUS_GRPC_OPTIONS
from weir_deploy.base import free_port
from weir_deploy.kafka import ApacheKafka, TansuKafka, new_cluster_id

pytestmark = pytest.mark.integration


@pytest.fixture(params=["apache", "tansu"])
async def kafka_bootstrap(
    request: pytest.FixtureRequest, stack_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[str]:
    """The stack's broker when it is of the wanted kind, else a private one."""
    impl = request.param
    stack_impl = os.environ.get("KAFKA_IMPL", "apache")
    if impl == stack_impl or os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        yield stack_env["KAFKA_BOOTSTRAP_SERVERS"]
        return
    engine = (
        ApacheKafka(tmp_path, free_port())
        if impl == "apache"
        else TansuKafka(tmp_path, free_port())
    )
    await engine.start()
    try:
        yield engine.bootstrap
    finally:
        await engine.stop()


async def test_kafka_round_trip(kafka_bootstrap: str) -> None:

    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait(topic, f"m{i}".encode(), key=str(i).encode())
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    got: set[bytes] = set()
    try:
        async with asyncio.timeout(60):
            while len(got) < 10:
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    got.update(r.value for r in records if r.value is not None)
        await consumer.commit()
    finally:
        await consumer.stop()
    assert got == {f"m{i}".encode() for i in range(10)}


async def test_postgres_query(stack_env: dict[str, str]) -> None:
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:
        assert await conn.fetchval("select current_database()") == "weir"
        await conn.execute("create temp table t (id int primary key, body text)")
        await conn.execute("insert into t values (1, 'héllo')")
        assert await conn.fetchval("select body from t where id = 1") == "héllo"
    finally:
        await conn.close()


async def test_redis_set_get(stack_env: dict[str, str]) -> None:
    client = aioredis.Redis.from_url(stack_env["REDIS_URL"])
    try:
        await client.set("weir:test", "value")
        assert await client.get("weir:test") == b"value"
    finally:
        await client.aclose()


def _milvus_round_trip(uri: str) -> list[int]:
    # dedicated, with weir's keepalive: a shared idle connection pinging every 10 s is sent
    # GOAWAY (too_many_pings) by Milvus Lite, and pymilvus hands it to later clients of the uri
    client = MilvusClient(uri=uri, grpc_options=MILVUS_GRPC_OPTIONS, dedicated=True)
    name = f"c_{uuid.uuid4().hex[:8]}"
    try:
        client.create_collection(name, dimension=4, metric_type="L2")
        rows = [{"id": i, "vector": [float(i), 0.0, 0.0, 1.0]} for i in range(5)]
        client.insert(name, rows)
        hits = client.search(name, data=[[3.1, 0.0, 0.0, 1.0]], limit=2)
        return [int(hit["id"]) for hit in hits[0]]
    finally:
        client.drop_collection(name)
        client.close()


async def test_milvus_collection_insert_search(stack_env: dict[str, str]) -> None:
    ids = await asyncio.to_thread(_milvus_round_trip, stack_env["MILVUS_URI"])
    assert ids[0] == 3


def test_cluster_ids_never_read_as_options() -> None:
    ids = [new_cluster_id() for _ in range(2000)]
    assert not any(i.startswith("-") for i in ids)
    assert len(set(ids)) == len(ids)
