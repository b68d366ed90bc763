"""`weir dlq` against Apache Kafka: a parked event is listed, shown and replayed to its topic."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from weir_common.bus import ensure_topics
from weir_common.events import new_id
from weir_deploy.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    """The commands configure structlog for the captured stderr; later tests log elsewhere."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


async def _park(bootstrap: str, origin: str) -> None:
    await ensure_topics(bootstrap, [origin, f"{origin}.dlq"], 1)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            f"{origin}.dlq",
            b'{"text": "parked"}',
            key=b"conv-9",
            headers=[
                ("x-event-type", b"chat.requested"),
                ("x-dlq-reason", b"handler_error"),
                ("x-dlq-error", b"RuntimeError: a bug"),
                ("x-dlq-topic", origin.encode()),
            ],
        )
    finally:
        await producer.stop()


async def _read(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes, dict[str, bytes]]]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=3000)
        return [(r.key, r.value, dict(r.headers)) for rs in batch.values() for r in rs]
    finally:
        await consumer.stop()


def test_weir_dlq_lists_shows_and_replays_a_parked_event(
    stack_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", bootstrap)
    origin = f"cli{new_id()[:8]}.chat.requested"
    asyncio.run(_park(bootstrap, origin))

    assert main(["dlq", "list"]) == 0
    listed = capsys.readouterr().out
    assert f"       1  {origin}.dlq" in listed.splitlines(), listed

    assert main(["dlq", "show", origin]) == 0
    shown = capsys.readouterr().out
    assert "key=conv-9  handler_error (tries 1) from " + origin + ": RuntimeError: a bug" in shown

    assert main(["dlq", "replay", origin]) == 0
    assert capsys.readouterr().out.strip() == f"replayed 1 event(s) of {origin}.dlq"
    assert main(["dlq", "replay", f"{origin}.dlq"]) == 0  # once: nothing new to replay
    assert capsys.readouterr().out.strip() == f"replayed 0 event(s) of {origin}.dlq"
    replayed = asyncio.run(_read(bootstrap, origin))
    assert replayed == [(b"conv-9", b'{"text": "parked"}', {"x-event-type": b"chat.requested"})]
