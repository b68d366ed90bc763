"""Reading a run's replies back from its reply topic, for a client that resumes it.

The replies of a run go to the reply topic of the gateway instance that accepted it. A client
whose socket (or whose gateway) went away resumes on any instance: that instance reads the
run's reply topic from the moment the run was requested, with a consumer of its own (no
group, nothing committed), and hands every reply of the run to the hub until the run ends.
The hub orders and dedupes, so the client gets exactly the pieces after the last one it
had, then the live rest, then one final frame; no sticky sessions are needed.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from aiokafka import AIOKafkaConsumer
from pydantic import ValidationError

from weir_common.bus import KafkaCredentials, client_options
from weir_common.events import REPLY_ADAPTER, Reply
from weir_gateway.service import ReplyHub

log = structlog.get_logger(__name__)

#: The clocks of the gateway that stamped the request and of the broker may differ a little.
CLOCK_SLACK = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class ReplySource:
    """Where a run's replies went: the reply topic, and when the run was requested."""

    topic: str
    since: datetime


async def tail_run(
    bootstrap: str,
    source: ReplySource,
    run_id: str,
    hub: ReplyHub,
    credentials: KafkaCredentials | None = None,
) -> None:
    """Hand the replies of `run_id` on `source.topic`, from `source.since` on, to `hub`
    until the hub no longer follows the run (it ended, or its connection closed); the
    gateway's own `credentials` when the broker wants SASL."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        **client_options(credentials),
    )
    await consumer.start()
    try:
        if not await _seek(consumer, source):
            return
        heard = 0
        while hub.following(run_id):
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    reply = _reply(record.value)
                    if reply is not None and reply.run_id == run_id:
                        heard += 1
                        hub.dispatch(reply)
        log.info("resume.read_back", run_id=run_id, topic=source.topic, replies=heard)
    finally:
        with contextlib.suppress(Exception):
            await consumer.stop()


async def _seek(consumer: AIOKafkaConsumer, source: ReplySource) -> bool:
    """Read every partition of the topic from the first offset at or after `since`."""
    if source.topic not in await consumer.topics():
        log.info("resume.no_reply_topic", topic=source.topic)
        return False
    consumer.subscribe([source.topic])  # no group: every partition, once metadata is in
    async with asyncio.timeout(10):
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)  # records before the seek are read again
    partitions = sorted(consumer.assignment())
    since_ms = int((source.since - CLOCK_SLACK).timestamp() * 1000)
    offsets = await consumer.offsets_for_times(dict.fromkeys(partitions, since_ms))
    for partition in partitions:
        found = offsets.get(partition)
        if found is None:  # nothing that recent in this partition: only what comes next
            await consumer.seek_to_end(partition)
        else:
            consumer.seek(partition, found.offset)
    return True


def _reply(value: bytes | None) -> Reply | None:
    """The reply in one record; None for anything else (a reply topic carries only replies,
    but a record that does not parse is no reason to stop)."""
    if not value:
        return None
    try:
        return REPLY_ADAPTER.validate_json(value)
    except ValidationError:
        return None
