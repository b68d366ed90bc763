"""The Kafka broker every service uses, with tracing and dead letters wired in."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from faststream.kafka import KafkaBroker
from faststream.middlewares import AckPolicy
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus.commits import BackgroundCommits
from weir_common.bus.credentials import KafkaCredentials, client_options
from weir_common.bus.deadletter import DeadLetters, RetryPolicy
from weir_common.bus.logcontext import LogContext, broker_logger, trace_messages
from weir_common.bus.telemetry import ValidKafkaTelemetryMiddleware
from weir_common.events import ChatRequested, Event, IngestRequested
from weir_common.ownership import OWN_TOPIC_TYPES, REPLY_TYPES
from weir_common.topics import Topics

#: How long aiokafka's loops (coordinator lookup, fetcher, metadata, producer) wait before
#: trying a failed request again (aiokafka's default: 100 ms). With the broker down, the
#: services' ~16 clients retried ten times a second each: ~28% of a core across the stack
#: (harness 9%, router 6.5%), doing nothing. A broker back after a restart is found up to
#: this much later.
RETRY_BACKOFF_MS = 500


def make_broker(
    bootstrap: str,
    service: str,
    tracer_provider: TracerProvider,
    retry: RetryPolicy | None = None,
    *,
    credentials: KafkaCredentials | None = None,
    message_log_level: int = logging.DEBUG,
) -> KafkaBroker:
    """A KafkaBroker with trace context on every hop, transient handler failures retried in
    place and poison events sent to `.dlq`; `credentials` name the service's principal
    when the broker wants SASL.

    FastStream's line per message received and processed is written at
    `message_log_level`: DEBUG by default, so `LOG_LEVEL=DEBUG` shows it. At INFO it was two
    lines per event, ~30 per chat turn across the services, for what the trace and the run
    record already hold (failures are logged as errors whatever the level)."""
    logger = broker_logger(service)
    broker = KafkaBroker(
        bootstrap,
        logger=logger,
        log_level=message_log_level,
        security=credentials.faststream() if credentials is not None else None,
        client_id=f"weir-{service}",
        # telemetry first, so the span is current while LogContext and the handler log
        middlewares=[ValidKafkaTelemetryMiddleware(tracer_provider=tracer_provider), LogContext],
        # the zero-setup broker rejects InitProducerId, and dedupe happens in handlers anyway
        enable_idempotence=False,
        acks="all",
        linger_ms=0,
        retry_backoff_ms=RETRY_BACKOFF_MS,
    )
    broker.add_middleware(BackgroundCommits())  # outside DeadLetters: parked is handled
    broker.add_middleware(DeadLetters(broker, retry or RetryPolicy()))
    trace_messages(logger, broker.context)
    return broker


#: How often a consumer's fetch loop wakes with nothing to do (aiokafka's default: 200 ms, five
#: times a second per consumer, ~16 consumers in the stack). It wakes anyway when a fetch
#: answers, records are consumed or the assignment changes.
CONSUMER_TIMEOUT_MS = 1000


def _consumer(group: str, ack_policy: AckPolicy, fetch_max_wait_ms: int) -> dict[str, Any]:
    """What every subscriber sets: its group, how it acknowledges, and how it fetches."""
    return {
        "group_id": group,
        "ack_policy": ack_policy,
        "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": fetch_max_wait_ms,
        "consumer_timeout_ms": CONSUMER_TIMEOUT_MS,
    }


def subscriber_options(group: str, *, fetch_max_wait_ms: int = 500) -> dict[str, Any]:
    """Options for a subscriber that owns durable state (the harness, batch ingestion).

    An event is committed once the handler (or the dead-letter middleware) is done with it,
    so a crash mid-handler redelivers the event: at-least-once, with idempotent handlers.
    The commits are `AckPolicy.MANUAL`'s: `BackgroundCommits` commits what was handled
    together, in the background, instead of one awaited commit per event (`ACK`).
    `earliest` because a new group must not skip what was published before it joined.
    `fetch_max_wait_ms` bounds a fetch's long poll (brokers that do not wake a multi-partition
    fetch when data arrives, like tansu, need it small).
    """
    return _consumer(group, AckPolicy.MANUAL, fetch_max_wait_ms)


def partition_subscriber_options(
    group: str, workers: int, *, fetch_max_wait_ms: int = 500
) -> dict[str, Any]:
    """Options for a durable subscriber that handles up to `workers` events at once.

    FastStream then runs `workers` consumers in the group, each with partitions of its own,
    each handling its events one by one, committed once handled: the delivery of
    `subscriber_options`, and the events of one key stay in order. Concurrency is bounded
    by the topic's partitions (`TOPIC_PARTITIONS`).
    """
    return _consumer(group, AckPolicy.MANUAL, fetch_max_wait_ms) | {"max_workers": workers}


def reply_subscriber_options(group: str, *, fetch_max_wait_ms: int = 500) -> dict[str, Any]:
    """Options for a gateway's subscriber of its own reply topic.

    Replies are committed in the background (`AckPolicy.ACK_FIRST`: aiokafka's periodic
    auto-commit), not one commit request per reply: a reply is only worth something to the
    socket that waits for it, and a gateway that dies takes its sockets along. A client that
    resumes reads the run's replies back from the topic by time (`weir_gateway.tail`), and
    the run's record has its final answer, so a skipped or repeated reply loses nothing (the
    hub drops pieces it has sent).
    """
    return _consumer(group, AckPolicy.ACK_FIRST, fetch_max_wait_ms)


def command_subscriber_options(
    group: str, max_workers: int, *, fetch_max_wait_ms: int = 500
) -> dict[str, Any]:
    """Options for a worker consuming the harness's step commands, handled concurrently.

    Commands are acknowledged on receipt so that `max_workers` of them (slow model calls)
    run at once. Nothing is lost by that: the harness keeps every pending command with a
    deadline and sends it again if no result comes, so it stays the one owner of retries.
    """
    return _consumer(group, AckPolicy.ACK_FIRST, fetch_max_wait_ms) | {"max_workers": max_workers}


def key_of(event: Event) -> bytes | None:
    """The partition key: conversation for chat (order per conversation), document for
    ingestion (a document's versions in the order they were sent), run for steps."""
    if isinstance(event, ChatRequested):
        key = event.conversation_id
    elif isinstance(event, IngestRequested):
        key = event.document_id
    else:
        key = event.run_id
    return key.encode() if key else None


async def publish(
    broker: KafkaBroker, topics: Topics, event: Event, topic: str | None = None
) -> None:
    """Publish `event` on its own topic (or `topic`, a requester's `reply_to`), keyed as the
    catalogue says.

    Only what the ownership map says is published goes out, so every topic published
    through here is in the event contract (`docs/asyncapi.json`, generated from that map):
    an event type on its own topic must be some principal's `produces`, one sent elsewhere
    some service's `replies`. Anything else raises `ValueError`.
    """
    event_type = str(getattr(event, "type", ""))
    own = topic is None or topic == topics.of(event_type)
    if event_type not in (OWN_TOPIC_TYPES if own else REPLY_TYPES):
        where = "on its own topic" if own else "as a reply"
        raise ValueError(
            f"{event_type!r} is not published {where} in weir_common.ownership: add it there"
            " and run `make contract`"
        )
    await broker.publish(
        event.model_dump(mode="json"),
        topic=topic or topics.of(event_type),
        key=key_of(event),
        headers={"x-event-type": event_type},
    )


async def ensure_topics(
    bootstrap: str,
    names: list[str],
    partitions: int,
    *,
    replication_factor: int = 1,
    min_insync_replicas: int | None = None,
    credentials: KafkaCredentials | None = None,
) -> None:
    """Create the topics that do not exist yet.

    The local broker is a single node (replication factor 1); an external cluster gets its
    replication factor and `min.insync.replicas` from settings, so that `acks=all` really
    means written to that many brokers.
    """
    configs = {"min.insync.replicas": str(min_insync_replicas)} if min_insync_replicas else {}
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="weir-admin", **client_options(credentials)
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [n for n in dict.fromkeys(names) if n not in existing]
        if missing:
            # another service may create them first
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(
                    [
                        NewTopic(
                            n,
                            num_partitions=partitions,
                            replication_factor=replication_factor,
                            topic_configs=configs,
                        )
                        for n in missing
                    ]
                )
    finally:
        await admin.close()


async def wait_until_assigned(broker: KafkaBroker, timeout_s: float = 30.0) -> bool:
    """Wait until every subscriber's consumer group has given it partitions.

    A service that reports ready before its group has joined would leave the first events
    waiting for a rebalance (seconds on some brokers). Returns False on time-out, which is
    legitimate when a group has more members than partitions.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    for sub in broker.subscribers:
        consumers = getattr(sub, "consumer_subgroup", None) or [getattr(sub, "consumer", None)]
        while not any(c is not None and c.assignment() for c in consumers):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.05)
    return True
