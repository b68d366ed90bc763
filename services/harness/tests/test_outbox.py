"""The outbox relay on a real PostgreSQL and a real Apache Kafka (or tansu).

Rows are written the way the run service writes them (`RunTx.enqueue`, in a transaction),
and read back from the broker with a plain consumer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer
from faststream.kafka import KafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import ensure_topics, make_broker
from weir_common.events import RunStep, new_id
from weir_common.topics import Topics
from weir_deploy.base import free_port
from weir_deploy.kafka import ApacheKafka
from weir_harness.driver import Outgoing
from weir_harness.outbox import OutboxRelay, RelayPolicy
from weir_harness.repository import RunRepository, init_connection

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.timeout(180)]

FAST = RelayPolicy(poll_interval_s=0.1, backoff_base_s=0.2, backoff_max_s=0.5)
# no poll nor retry within a test: what goes out went by hand-over
NO_POLL = RelayPolicy(poll_interval_s=600, backoff_base_s=600, backoff_max_s=600)


@pytest.fixture
def topics() -> Topics:
    return Topics(prefix=f"outbox{new_id()[:8]}.")


@pytest.fixture
async def repo(database_url: str, topics: Topics) -> AsyncIterator[RunRepository]:
    """The repository of the deployment whose topics the relay publishes to."""
    repository = RunRepository(database_url, topics.prefix)
    await repository.open()
    try:
        yield repository
    finally:
        await repository.close()


@pytest.fixture
async def connection(database_url: str, repo: RunRepository) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the test's database (schema migrated by `repo`)."""
    conn = await asyncpg.connect(database_url)
    await init_connection(conn)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def broker(stack_env: dict[str, str]) -> AsyncIterator[KafkaBroker]:
    started = make_broker(stack_env["KAFKA_BOOTSTRAP_SERVERS"], "outboxtest", TracerProvider())
    async with started:
        await started.start()
        yield started


@pytest.fixture
async def wire(stack_env: dict[str, str], topics: Topics) -> tuple[str, str]:
    """The broker's address and the test deployment's reply topic (three partitions)."""
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    reply = topics.of("reply")
    await ensure_topics(bootstrap, [reply], 3)
    return bootstrap, reply


def step(run_id: str, content: str) -> RunStep:
    return RunStep(kind="thought", content=content, run_id=run_id)


async def enqueue(repo: RunRepository, topic: str, *events: RunStep) -> None:
    """Write `events` to the outbox, one transaction each (as the run service does)."""
    for event in events:
        async with repo.transaction() as tx:
            await tx.enqueue(event, topic, None)


async def enqueue_handed(repo: RunRepository, topic: str, *events: RunStep) -> list[Outgoing]:
    """Write `events` in one transaction; what the run service hands the relay after it."""
    async with repo.transaction() as tx:
        for event in events:
            await tx.enqueue(event, topic, None)
    return [Outgoing(e, topic, None, i) for e, i in zip(events, tx.outbox_ids, strict=True)]


async def leading(relay: OutboxRelay) -> None:
    async with asyncio.timeout(30):
        while not relay.leading:  # noqa: ASYNC110 - waits for the relay's own task
            await asyncio.sleep(0.05)


async def consume(bootstrap: str, topic: str, count: int) -> list[tuple[str, str]]:
    """The first `count` events of `topic` as (run_id, content), in each partition's order."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=new_id()
    )
    await consumer.start()
    found: list[tuple[str, str]] = []
    try:
        async with asyncio.timeout(60):
            while len(found) < count:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for record in records:
                        body = json.loads(record.value or b"{}")
                        found.append((body["run_id"], body["content"]))
    finally:
        await consumer.stop()
    return found


def of_run(found: list[tuple[str, str]], run_id: str) -> list[str]:
    return [content for run, content in found if run == run_id]


async def outbox_rows(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT run_id, attempts, last_error FROM outbox ORDER BY id"))


async def test_relay_publishes_each_runs_rows_in_order_and_empties_the_outbox(
    wire: tuple[str, str],
    repo: RunRepository,
    connection: asyncpg.Connection,
    broker: KafkaBroker,
    topics: Topics,
) -> None:
    bootstrap, reply = wire
    for i in range(4):
        await enqueue(repo, reply, step("run-a", f"a{i}"), step("run-b", f"b{i}"))
    relay = OutboxRelay("unused", broker, topics, FAST)

    assert await relay.relay_once(connection) == 8

    found = await consume(bootstrap, reply, 8)
    assert of_run(found, "run-a") == ["a0", "a1", "a2", "a3"]
    assert of_run(found, "run-b") == ["b0", "b1", "b2", "b3"]
    assert await outbox_rows(connection) == []


async def test_a_failed_publish_is_kept_and_holds_back_only_the_rows_of_its_run(
    wire: tuple[str, str],
    repo: RunRepository,
    connection: asyncpg.Connection,
    broker: KafkaBroker,
    topics: Topics,
) -> None:
    bootstrap, reply = wire
    # larger than the producer's max request size: the broker client refuses it
    await enqueue(repo, reply, step("run-a", "x" * 2_000_000), step("run-a", "a1"))
    await enqueue(repo, reply, step("run-b", "b0"))
    relay = OutboxRelay("unused", broker, topics, RelayPolicy(backoff_base_s=60))

    assert await relay.relay_once(connection) == 1  # run-b went on
    waiting = await outbox_rows(connection)
    assert [(r["run_id"], r["attempts"]) for r in waiting] == [("run-a", 1), ("run-a", 0)]
    assert "MessageSizeTooLarge" in waiting[0]["last_error"]
    assert await relay.relay_once(connection) == 0  # within its backoff: not tried again
    assert (await outbox_rows(connection))[0]["attempts"] == 1
    assert await consume(bootstrap, reply, 1) == [("run-b", "b0")]


@pytest.mark.slow
async def test_rows_written_while_the_broker_is_down_all_go_out_in_order_after_it_returns(
    repo: RunRepository,
    database_url: str,
    connection: asyncpg.Connection,
    topics: Topics,
    tmp_path: Path,
) -> None:
    kafka = ApacheKafka(tmp_path, free_port())
    await kafka.start()
    try:
        bootstrap = kafka.env()["KAFKA_BOOTSTRAP_SERVERS"]
        reply = topics.of("reply")
        await ensure_topics(bootstrap, [reply], 3)
        broker = KafkaBroker(bootstrap, request_timeout_ms=2000, enable_idempotence=False)
        async with broker:
            await broker.start()
            relay = OutboxRelay(database_url, broker, topics, FAST)
            task = asyncio.create_task(relay.run_forever())
            try:
                await kafka.stop()
                for i in range(3):
                    await enqueue(repo, reply, step("run-a", f"a{i}"), step("run-b", f"b{i}"))
                    relay.wake()
                async with asyncio.timeout(60):  # the relay tried, failed and kept every row
                    while not any(r["attempts"] for r in await outbox_rows(connection)):  # noqa: ASYNC110 - polls a table
                        await asyncio.sleep(0.2)
                assert len(await outbox_rows(connection)) >= 5
                await kafka.start()
                async with asyncio.timeout(90):
                    while await outbox_rows(connection):  # noqa: ASYNC110 - polls a table
                        await asyncio.sleep(0.2)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        found = await consume(bootstrap, reply, 6)
    finally:
        await kafka.stop()
    assert of_run(found, "run-a") == ["a0", "a1", "a2"]
    assert of_run(found, "run-b") == ["b0", "b1", "b2"]


async def test_deployments_sharing_a_database_each_relay_only_their_own_rows(
    wire: tuple[str, str],
    repo: RunRepository,
    database_url: str,
    connection: asyncpg.Connection,
    broker: KafkaBroker,
    topics: Topics,
) -> None:
    bootstrap, reply = wire
    theirs = Topics(prefix=f"other{new_id()[:8]}.")
    other = RunRepository(database_url, theirs.prefix)
    await other.open()
    try:
        await enqueue(repo, reply, step("run-a", "a0"))
        await enqueue(other, reply, step("run-z", "z0"))
        assert await OutboxRelay("unused", broker, topics, FAST).relay_once(connection) == 1
        assert [r["run_id"] for r in await outbox_rows(connection)] == ["run-z"]
        assert await consume(bootstrap, reply, 1) == [("run-a", "a0")]
        assert await OutboxRelay("unused", broker, theirs, FAST).relay_once(connection) == 1
        assert await outbox_rows(connection) == []
    finally:
        await other.close()


async def test_one_relay_leads_and_a_standby_takes_over_when_it_goes(
    wire: tuple[str, str],
    repo: RunRepository,
    database_url: str,
    connection: asyncpg.Connection,
    broker: KafkaBroker,
    topics: Topics,
) -> None:
    bootstrap, reply = wire
    first = OutboxRelay(database_url, broker, topics, FAST)
    second = OutboxRelay(database_url, broker, topics, FAST)
    leader = asyncio.create_task(first.run_forever())
    await enqueue(repo, reply, step("run-a", "a0"))
    first.wake()
    assert await consume(bootstrap, reply, 1) == [("run-a", "a0")]
    standby = asyncio.create_task(second.run_forever())
    try:
        await asyncio.sleep(0.5)
        holders = await connection.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 7263"
        )
        assert holders == 1
        leader.cancel()
        await asyncio.gather(leader, return_exceptions=True)
        await enqueue(repo, reply, step("run-a", "a1"))  # woken by NOTIFY, or its poll
        found = await consume(bootstrap, reply, 2)
        assert of_run(found, "run-a") == ["a0", "a1"]
    finally:
        standby.cancel()
        await asyncio.gather(standby, return_exceptions=True)


@pytest.fixture
async def relay(
    database_url: str, broker: KafkaBroker, topics: Topics, repo: RunRepository
) -> AsyncIterator[OutboxRelay]:
    """The leading relay of `repo`'s process: its rows come by hand-over, it never polls."""
    relay = OutboxRelay(database_url, broker, topics, NO_POLL, writer=repo.writer)
    task = asyncio.create_task(relay.run_forever())
    try:
        await leading(relay)
        yield relay
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def emptied(connection: asyncpg.Connection) -> None:
    async with asyncio.timeout(30):
        while await outbox_rows(connection):  # noqa: ASYNC110 - polls a table
            await asyncio.sleep(0.05)


async def test_rows_handed_over_go_out_at_once_in_order_and_leave_the_outbox(
    wire: tuple[str, str],
    repo: RunRepository,
    connection: asyncpg.Connection,
    relay: OutboxRelay,
) -> None:
    bootstrap, reply = wire
    for i in range(3):  # its own NOTIFYs do not wake it, nor does a poll come
        relay.hand(
            await enqueue_handed(repo, reply, step("run-a", f"a{i}"), step("run-b", f"b{i}"))
        )

    found = await consume(bootstrap, reply, 6)
    assert of_run(found, "run-a") == ["a0", "a1", "a2"]
    assert of_run(found, "run-b") == ["b0", "b1", "b2"]
    await emptied(connection)


async def test_handed_rows_wait_behind_a_row_of_their_run_that_waits_for_a_retry_then_go_on(
    wire: tuple[str, str],
    repo: RunRepository,
    connection: asyncpg.Connection,
    relay: OutboxRelay,
) -> None:
    bootstrap, reply = wire
    # larger than the producer's max request size: the broker client refuses it
    relay.hand(await enqueue_handed(repo, reply, step("run-a", "x" * 2_000_000)))
    async with asyncio.timeout(30):
        while not (await outbox_rows(connection))[0]["attempts"]:  # noqa: ASYNC110 - polls a table
            await asyncio.sleep(0.05)

    relay.hand(await enqueue_handed(repo, reply, step("run-a", "a1"), step("run-b", "b0")))

    assert await consume(bootstrap, reply, 1) == [("run-b", "b0")]
    # the relay deletes a row after the broker's acknowledgement, which can come after the
    # consumer got it (CI60 read run-b's row still there)
    async with asyncio.timeout(30):
        while any(r["run_id"] == "run-b" for r in await outbox_rows(connection)):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    waiting = await outbox_rows(connection)
    assert [(r["run_id"], r["attempts"]) for r in waiting] == [("run-a", 1), ("run-a", 0)]

    await connection.execute("DELETE FROM outbox WHERE attempts > 0")  # given up by hand
    relay.wake()  # the poll sends what was held back; the run's hand-overs go out again
    await emptied(connection)
    relay.hand(await enqueue_handed(repo, reply, step("run-a", "a2")))
    found = await consume(bootstrap, reply, 3)
    assert of_run(found, "run-a") == ["a1", "a2"]


async def test_a_row_polled_before_it_was_handed_over_goes_out_once(
    wire: tuple[str, str],
    repo: RunRepository,
    connection: asyncpg.Connection,
    relay: OutboxRelay,
) -> None:
    bootstrap, reply = wire
    late = await enqueue_handed(repo, reply, step("run-a", "a0"), step("run-a", "a1"))
    relay.wake()  # a poll takes them first
    await emptied(connection)
    relay.hand(late)
    relay.hand(await enqueue_handed(repo, reply, step("run-a", "a2")))

    found = await consume(bootstrap, reply, 3)
    assert of_run(found, "run-a") == ["a0", "a1", "a2"]


async def test_a_standby_leaves_its_rows_to_the_leader_of_another_process(
    wire: tuple[str, str],
    repo: RunRepository,
    database_url: str,
    connection: asyncpg.Connection,
    broker: KafkaBroker,
    topics: Topics,
) -> None:
    bootstrap, reply = wire
    leader = OutboxRelay(database_url, broker, topics, NO_POLL, writer="another process")
    standby = OutboxRelay(database_url, broker, topics, NO_POLL, writer=repo.writer)
    tasks = [asyncio.create_task(leader.run_forever())]
    try:
        await leading(leader)
        tasks.append(asyncio.create_task(standby.run_forever()))
        items = await enqueue_handed(repo, reply, step("run-a", "a0"), step("run-a", "a1"))
        standby.hand(items)  # not leading: the leader heard of them by NOTIFY
        await emptied(connection)
        marker = await enqueue_handed(repo, reply, step("run-b", "end"))
        standby.hand(marker)
        found = await consume(bootstrap, reply, 3)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert of_run(found, "run-a") == ["a0", "a1"]
    assert not standby.leading
