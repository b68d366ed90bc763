"""Dead letters: list what was parked in `<topic>.dlq`, and re-publish it after a fix.

`python -m weir_deploy dlq list [TOPIC]` counts parked events per dead-letter topic (with a
topic: each event's offset, key, reason, error, origin and time).
`python -m weir_deploy dlq replay TOPIC` re-publishes the parked events of `TOPIC` (or of
`TOPIC.dlq`) to the topic they came from, with their key and headers (less the `x-dlq-*`
ones). How far it replayed is committed as the offset of the consumer group
`weir.dlq.replay`, so a second replay sends only newer ones.

Against a broker that wants SASL the tool authenticates as the principal in
`KAFKA_SECURITY_PROTOCOL`, `KAFKA_SASL_USERNAME` and `KAFKA_SASL_PASSWORD` (an operator's
one: replaying writes to any topic).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from weir_common.bus import KafkaCredentials

from .base import default_data_dir

SUFFIX = ".dlq"
PREFIX = "x-dlq-"
REPLAY_GROUP = "weir.dlq.replay"
DEFAULT_BOOTSTRAP = "127.0.0.1:19092"


def bootstrap_servers(data_dir: Path | None = None) -> str:
    """`KAFKA_BOOTSTRAP_SERVERS`, else the running stack's `stack.env`, else the default."""
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    env_file = (data_dir or default_data_dir()) / "stack.env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "KAFKA_BOOTSTRAP_SERVERS" and value:
                return value
    return DEFAULT_BOOTSTRAP


def _auth() -> dict[str, Any]:
    """aiokafka keyword arguments for the operator's credentials in the environment."""
    return KafkaCredentials.from_env().aiokafka()


def dead_letter_topic(topic: str) -> str:
    """The dead-letter topic of `topic` (itself when it is one)."""
    return topic if topic.endswith(SUFFIX) else topic + SUFFIX


@dataclass(frozen=True, slots=True)
class Parked:
    """One parked event, as an operator reads it."""

    offset: int
    partition: int
    key: str | None
    reason: str
    error: str
    origin: str
    tries: str
    time: str


async def _stop(consumer: AIOKafkaConsumer) -> None:
    """Stop a consumer. aiokafka's group-less coordinator re-raises the cancellation of its
    own background task when that task had not started yet; only ours may cancel us."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


def _headers(record: ConsumerRecord[bytes, bytes]) -> dict[str, str]:
    return {k: v.decode(errors="replace") for k, v in record.headers}


def _parked(record: ConsumerRecord[bytes, bytes]) -> Parked:
    headers = _headers(record)
    return Parked(
        offset=record.offset,
        partition=record.partition,
        key=record.key.decode(errors="replace") if record.key else None,
        reason=headers.get(PREFIX + "reason", "?"),
        error=headers.get(PREFIX + "error", ""),
        origin=headers.get(PREFIX + "topic", record.topic.removesuffix(SUFFIX)),
        tries=headers.get(PREFIX + "tries", "1"),
        time=headers.get(PREFIX + "time", "?"),
    )


async def _partitions(bootstrap: str, names: list[str] | None = None) -> list[TopicPartition]:
    """Every partition of `names` (None: of every dead-letter topic)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="weir-dlq", **_auth())
    await admin.start()
    try:
        if names is None:
            names = sorted(t for t in await admin.list_topics() if t.endswith(SUFFIX))
        described = await admin.describe_topics(names) if names else []
    finally:
        await admin.close()
    return [
        TopicPartition(topic["topic"], part["partition"])
        for topic in described
        for part in topic["partitions"]
    ]


async def counts(bootstrap: str) -> dict[str, int]:
    """Events held per dead-letter topic (those with none are left out)."""
    every = await _partitions(bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **_auth())
    await consumer.start()
    try:
        held: dict[str, int] = {}
        for name in sorted({p.topic for p in every}):
            parts = [p for p in every if p.topic == name]
            first = await consumer.beginning_offsets(parts)
            last = await consumer.end_offsets(parts)
            total = sum(last[p] - first[p] for p in parts)
            if total:
                held[name] = total
        return held
    finally:
        await _stop(consumer)


async def _read(
    consumer: AIOKafkaConsumer, bootstrap: str, topic: str, limit: int | None
) -> list[ConsumerRecord]:
    """Records of `topic` from the consumer's position up to the end offsets at the start."""
    parts = await _partitions(bootstrap, [topic])
    consumer.assign(parts)  # every partition, without a group rebalance
    end = await consumer.end_offsets(parts)
    records: list[ConsumerRecord] = []
    while True:
        left = [p for p in parts if await consumer.position(p) < end[p]]
        if not left or (limit is not None and len(records) >= limit):
            return records[:limit] if limit is not None else records
        batch = await consumer.getmany(*left, timeout_ms=1000)
        for part_records in batch.values():
            records.extend(part_records)


async def parked(bootstrap: str, topic: str, limit: int | None = None) -> list[Parked]:
    """The events parked in the dead-letter topic of `topic`, oldest first."""
    name = dead_letter_topic(topic)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **_auth(),
    )
    await consumer.start()
    try:
        return [_parked(r) for r in await _read(consumer, bootstrap, name, limit)]
    finally:
        await _stop(consumer)


async def replay(bootstrap: str, topic: str, limit: int | None = None) -> int:
    """Re-publish parked events of `topic` to their origin; how many were re-published."""
    name = dead_letter_topic(topic)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=REPLAY_GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **_auth(),
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **_auth())
    await consumer.start()
    await producer.start()
    try:
        records = await _read(consumer, bootstrap, name, limit)
        for record in records:
            headers = [(k, v) for k, v in record.headers if not k.startswith(PREFIX)]
            origin = _parked(record).origin
            await producer.send_and_wait(origin, record.value, key=record.key, headers=headers)
            part = TopicPartition(record.topic, record.partition)
            await consumer.commit({part: record.offset + 1})  # replayed up to here
        return len(records)
    finally:
        await producer.stop()
        await _stop(consumer)
