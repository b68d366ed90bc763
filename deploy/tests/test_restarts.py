"""The second day: a second `make run` on the same data folder, and each engine stopped and
started again on its port and data, serve what was stored before (Apache Kafka keeps its
KRaft cluster and the committed offsets, PostgreSQL its rows, Redis its append-only file,
Milvus its collections)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pymilvus import MilvusClient

from weir_deploy import Stack
from weir_deploy.base import free_port
from weir_deploy.kafka import ApacheKafka
from weir_deploy.stack import ALL_ENGINES

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC = f"restart-{uuid.uuid4().hex[:8]}"
GROUP = f"g-{TOPIC}"
COLLECTION = f"restart_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_run_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed ports, as `make run` has (random free ones, so parallel runs do not collide);
    no external engine from the session's environment."""
    for name in ("kafka", "kafka_controller", "postgres", "redis", "milvus"):
        monkeypatch.setenv(f"WEIR_{name.upper()}_PORT", str(free_port()))
    for url in ("KAFKA_BOOTSTRAP_SERVERS", "DATABASE_URL", "REDIS_URL", "MILVUS_URI"):
        monkeypatch.delenv(url, raising=False)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder the ``postgres`` user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="weir-restarts-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def cluster_id(stack: Stack) -> str:
    """The KRaft cluster id the broker's log dir was formatted with."""
    kafka = stack.engine("kafka")
    assert isinstance(kafka, ApacheKafka)
    meta = (kafka.work / "logs" / "meta.properties").read_text()
    return next(line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("cluster"))


async def store(env: dict[str, str]) -> None:
    """One row, one key, six events (three consumed and committed), one vector."""
    conn = await asyncpg.connect(env["DATABASE_URL"])
    try:
        await conn.execute("create table kept (id int primary key, body text)")
        await conn.execute("insert into kept values (1, 'day one')")
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(env["REDIS_URL"])
    try:
        await client.set("weir:kept", "day one")
    finally:
        await client.aclose()
    producer = AIOKafkaProducer(bootstrap_servers=env["KAFKA_BOOTSTRAP_SERVERS"])
    await producer.start()
    try:
        for i in range(6):
            await producer.send_and_wait(TOPIC, f"m{i}".encode(), partition=0)
    finally:
        await producer.stop()
    assert await consume(env, 3) == [b"m0", b"m1", b"m2"]
    await asyncio.to_thread(_milvus_store, env["MILVUS_URI"])


async def consume(env: dict[str, str], count: int) -> list[bytes]:
    """The next ``count`` events of the group, committed."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=env["KAFKA_BOOTSTRAP_SERVERS"],
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=1,
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        async with asyncio.timeout(60):
            while len(got) < count:
                record = await consumer.getone()
                got.append(record.value or b"")
        await consumer.commit()
    finally:
        await consumer.stop()
    return got


def _milvus_store(uri: str) -> None:
    client = MilvusClient(uri=uri, dedicated=True)
    try:
        client.create_collection(COLLECTION, dimension=4, metric_type="L2")
        client.insert(COLLECTION, [{"id": i, "vector": [float(i), 0, 0, 1]} for i in range(5)])
    finally:
        client.close()


def _milvus_ids(uri: str) -> list[int]:
    client = MilvusClient(uri=uri, dedicated=True)
    try:
        client.load_collection(COLLECTION)
        rows = client.query(COLLECTION, filter="id >= 0", output_fields=["id"])
        return sorted(int(row["id"]) for row in rows)
    finally:
        client.close()


async def kept(env: dict[str, str]) -> dict[str, object]:
    """What each engine serves of what `store` wrote."""
    conn = await asyncpg.connect(env["DATABASE_URL"])
    try:
        row = await conn.fetchval("select body from kept where id = 1")
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(env["REDIS_URL"])
    try:
        key = await client.get("weir:kept")
    finally:
        await client.aclose()
    return {
        "postgres": row,
        "redis": key,
        "milvus": await asyncio.to_thread(_milvus_ids, env["MILVUS_URI"]),
    }


DAY_ONE = {"postgres": "day one", "redis": b"day one", "milvus": [0, 1, 2, 3, 4]}


async def test_a_second_run_and_each_engine_restart_keep_the_data(
    make_run_env: None, data_dir: Path
) -> None:
    first = Stack(ALL_ENGINES, data_dir=data_dir, kafka_impl="apache")
    async with first:
        env = first.env()
        await store(env)
        formatted = cluster_id(first)

    second = Stack(ALL_ENGINES, data_dir=data_dir, kafka_impl="apache")
    async with second:
        assert second.env() == env
        assert cluster_id(second) == formatted
        assert await kept(env) == DAY_ONE
        assert await consume(env, 1) == [b"m3"]  # resumes at the committed offset

        for name in ALL_ENGINES:
            engine = second.engine(name)
            await engine.stop()
            await engine.start()
        assert second.env() == env  # same ports
        assert cluster_id(second) == formatted
        assert await kept(env) == DAY_ONE
        assert await consume(env, 2) == [b"m4", b"m5"]
