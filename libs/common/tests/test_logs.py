"""Every log line is one JSON object with the span's trace ids, whoever logs it: structlog,
uvicorn, FastStream (through a real publish and consume) and aiokafka."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker, publish, subscriber_options
from weir_common.events import RouteRequested
from weir_common.logs import Repeats, formatter, setup_logging
from weir_common.topics import Topics

pytestmark = pytest.mark.unit

TOPICS = Topics(prefix="logtest.")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    # an earlier test's in-process uvicorn (log_level="warning") leaves its logger at WARNING
    uvicorn_error = logging.getLogger("uvicorn.error")
    uvicorn_level = uvicorn_error.level
    uvicorn_error.setLevel(logging.NOTSET)
    out = io.StringIO()
    setup_logging("logtest", "INFO", as_json=True, stream=out)
    yield out
    root.handlers[:], _ = saved
    root.setLevel(saved[1])
    uvicorn_error.setLevel(uvicorn_level)
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def _records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_stdlib_loggers_of_libraries_log_json_with_the_current_span(lines: io.StringIO) -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        logging.getLogger("uvicorn.error").info(
            "Started server process [%d]", 7, extra={"color_message": "\x1b[36m%d\x1b[0m"}
        )
        logging.getLogger("aiokafka.consumer").warning("Heartbeat failed for group %s", "g1")
        structlog.get_logger("weir.test").info("step.done", step="plan")
    ctx = span.get_span_context()
    records = _records(lines)
    assert [r["logger"] for r in records] == ["uvicorn.error", "aiokafka.consumer", "weir.test"]
    assert records[0]["event"] == "Started server process [7]"
    assert "color_message" not in records[0]
    assert records[1]["event"] == "Heartbeat failed for group g1"
    for record in records:
        assert record["trace_id"] == format(ctx.trace_id, "032x")
        assert record["span_id"] == format(ctx.span_id, "016x")
        assert record["service"] == "logtest"
        assert record["level"] in ("info", "warning")
        assert record["timestamp"].endswith("Z")


async def test_a_consumed_event_logs_json_with_its_run_id_and_its_trace(
    lines: io.StringIO,
) -> None:
    broker = make_broker("127.0.0.1:1", "logtest", TracerProvider())
    log = structlog.get_logger("weir.handler")

    async def on_route(event: RouteRequested) -> None:
        log.info("route.handled", query=event.query)

    broker.subscriber(TOPICS.of("route.requested"), **subscriber_options("logtest"))(on_route)
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, RouteRequested(query="hi", run_id="run-42", conversation_id="c"))

    records = _records(lines)
    (handled,) = [r for r in records if r["event"] == "route.handled"]
    assert handled["run_id"] == "run-42"
    assert handled["event_type"] == "route.requested"
    assert len(handled["trace_id"]) == 32
    assert "run_id" not in structlog.contextvars.get_contextvars()


def test_faststreams_own_lines_reach_the_json_handler_with_the_messages_trace(
    lines: io.StringIO,
) -> None:
    # TestKafkaBroker swaps FastStream's logger for a mock, so its access lines ("Received",
    # "Processed") are sent here the way FastStream sends them: through the broker's logger,
    # with the message in the broker's context and no span current (as FastStream does)
    broker = make_broker("127.0.0.1:1", "logtest", TracerProvider(), message_log_level=logging.INFO)
    broker._setup_logger()
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    message = StreamMessage(
        raw_message=None, body=b"{}", headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    )
    with broker.context.scope("message", message):
        broker.config.logger.log("Received", extra={"topic": "t1", "message_id": "m1"})
    broker.config.logger.log("Started", extra={"topic": "t1"})  # no message: no trace
    logging.getLogger("faststream").warning("module logger")
    (received, started, module) = _records(lines)
    assert received["logger"] == "faststream.weir.logtest"
    assert received["event"] == "Received"
    assert received["topic"] == "t1"
    assert received["trace_id"] == trace_id
    assert "trace_id" not in started
    assert module["logger"] == "faststream"


def test_faststreams_per_message_lines_are_debug_by_default(lines: io.StringIO) -> None:
    # two lines per event at INFO were ~30 per chat turn; LOG_LEVEL=DEBUG brings them back
    broker = make_broker("127.0.0.1:1", "logtest", TracerProvider())
    broker._setup_logger()
    broker.config.logger.log("Received", extra={"topic": "t1", "message_id": "m1"})
    broker.config.logger.log("Processed", extra={"topic": "t1", "message_id": "m1"})
    logging.getLogger("faststream.weir.logtest").error("a failure is still logged")
    assert [r["event"] for r in _records(lines)] == ["a failure is still logged"]


def test_a_kafka_client_error_repeated_every_retry_is_written_once(lines: io.StringIO) -> None:
    for _ in range(50):  # what each retry of a consumer writes while the broker is down
        logging.getLogger("aiokafka.client").error("Unable connect to node with id %s", 1)
    logging.getLogger("weir.other").error("Unable connect to node with id %s", 1)
    logging.getLogger("weir.other").error("Unable connect to node with id %s", 1)
    written = _records(lines)
    assert [(r["logger"], r["event"]) for r in written] == [
        ("aiokafka.client", "Unable connect to node with id 1"),
        ("weir.other", "Unable connect to node with id 1"),
        ("weir.other", "Unable connect to node with id 1"),
    ]


def test_a_repeat_after_the_window_says_how_many_were_left_out() -> None:
    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter(as_json=True))
    handler.addFilter(Repeats(("kafka",), window_s=30.0, clock=lambda: now[0]))
    log = logging.getLogger("kafka.conn.test")
    log.propagate = False
    log.addHandler(handler)
    try:
        for t in (0.0, 1.0, 2.0, 29.0, 31.0, 32.0):
            now[0] = t
            log.warning("broker gone")
    finally:
        log.removeHandler(handler)
    written = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r.get("repeated") for r in written] == [None, 3]
