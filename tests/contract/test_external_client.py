"""An outside client of the event contract, on Apache Kafka: Kafka's own console producer and
consumer (`org.apache.kafka.tools.ConsoleProducer` and `...tools.consumer.ConsoleConsumer`,
what `kafka-console-producer.sh` and `kafka-console-consumer.sh` run, from the broker's own
jars) publish requests and read the replies of the running product.

Every payload is plain JSON written from `docs/asyncapi.json` alone: the topic is the
channel's address, the fields are the message schema's, and each payload is checked against
that schema before it is sent. Nothing of this repository builds them; the fixtures only say
where the product runs (broker, topic prefix, data folder).

Four requests: a chat turn, an ingestion, a retrieval of what was ingested, a tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.kafka_apache import DEFAULT_JVM_OPTS, find_java
from weir_deploy.kafka_jars import cached_classpath
from weir_deploy.services import Services

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CONTRACT = json.loads((Path(__file__).resolve().parents[2] / "docs/asyncapi.json").read_text())
DOC_PREFIX = "weir."  # the documented default of the topic prefix
REPLY_TIMEOUT_S = 90.0
Event = dict[str, Any]


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> str:
    return datetime.now(UTC).isoformat()


def message_schema(channel: str, event_type: str) -> dict[str, Any]:
    """The payload schema the contract gives `event_type` on `channel`."""
    for ref in CONTRACT["channels"][channel]["messages"].values():
        message = CONTRACT["components"]["messages"][ref["$ref"].rsplit("/", 1)[1]]
        if message["name"] == event_type:
            return {"$ref": message["payload"]["$ref"], "components": CONTRACT["components"]}
    raise AssertionError(f"the contract has no {event_type} on {channel}")


def shaped(channel: str, payload: Event) -> Event:
    """`payload`, checked against its schema in the contract, which some service receives."""
    jsonschema.Draft202012Validator(message_schema(channel, payload["type"])).validate(payload)
    ref = f"#/channels/{channel}"
    receivers = [k for k, op in CONTRACT["operations"].items()
                 if op["action"] == "receive" and op["channel"]["$ref"] == ref]  # fmt: skip
    assert receivers, f"nobody receives {channel}"
    return payload


@dataclass
class Console:
    """Kafka's console tools against the product's broker, topics under its prefix."""

    bootstrap: str
    prefix: str
    java: str
    classpath: str
    logs: Path

    def address(self, channel: str, **parameters: str) -> str:
        """The topic of a channel of the contract, in this deployment."""
        address: str = CONTRACT["channels"][channel]["address"]
        for name, value in parameters.items():
            address = address.replace(f"{{{name}}}", value)
        assert address.startswith(DOC_PREFIX), address
        return self.prefix + address.removeprefix(DOC_PREFIX)

    def _argv(self, tool: str, topic: str, *options: str) -> list[str]:
        return [self.java, *DEFAULT_JVM_OPTS.split(), "-cp", self.classpath, tool,
                "--bootstrap-server", self.bootstrap, "--topic", topic, *options]  # fmt: skip

    async def produce(self, channel: str, key: str, payload: Event) -> None:
        """One keyed record, as `kafka-console-producer.sh --property parse.key=true`."""
        options = ("--property", "parse.key=true", "--property", "key.separator=|")
        argv = self._argv("org.apache.kafka.tools.ConsoleProducer", self.address(channel), *options)
        line = f"{key}|{json.dumps(shaped(channel, payload))}\n"
        with (self.logs / "producer.log").open("a") as log:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=subprocess.PIPE, stdout=log, stderr=log
            )
            await asyncio.wait_for(proc.communicate(line.encode()), 60)
        assert proc.returncode == 0, (self.logs / "producer.log").read_text()[-2000:]

    async def consume(self, topic: str, last: Callable[[Event], bool]) -> list[Event]:
        """Records of `topic` from its beginning until `last` says one is the last,
        as `kafka-console-consumer.sh --from-beginning` prints them (one JSON per line)."""
        argv = self._argv("org.apache.kafka.tools.consumer.ConsoleConsumer", topic,
                          "--from-beginning")  # fmt: skip
        with (self.logs / "consumer.log").open("a") as log:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=log)
        assert proc.stdout is not None
        events: list[Event] = []
        try:
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                async for raw in proc.stdout:
                    with contextlib.suppress(ValueError):
                        events.append(json.loads(raw))
                        if last(events[-1]):
                            return events
        except TimeoutError:
            pytest.fail(f"no last record on {topic} in {REPLY_TIMEOUT_S}s; read: {events}")
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        pytest.fail(f"the console consumer of {topic} ended early; read: {events}")


@pytest.fixture(scope="module")
def console(
    product: Services, topic_prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> Console:
    java, classpath = find_java(), cached_classpath()
    assert java, "java is missing: run `make setup`"
    assert classpath, "the Apache Kafka jars are missing: run `python -m weir_deploy fetch`"
    bootstrap = product.base_env["KAFKA_BOOTSTRAP_SERVERS"]
    return Console(bootstrap, topic_prefix, java, classpath, tmp_path_factory.mktemp("console"))


def envelope(user: str) -> Event:
    return {"event_id": new_id(), "occurred_at": now(), "schema_version": 1, "user_id": user}


@dataclass
class Ingested:
    user: str
    document_id: str
    source: str
    word: str
    replies: list[Event]


@pytest.fixture(scope="module")
async def ingested(console: Console, product: Services) -> Ingested:
    """A small Markdown document of a fresh user, ingested by an `ingest.requested`."""
    user, word = f"ext-{new_id()[:8]}", f"zyl{new_id()[:6]}"
    folder = Path(product.base_env["DATA_DIR"]) / "objects" / "external"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{word}.md"
    stored.write_text(f"# Field notes\n\nThe {word} is a harbour crane painted orange.\n"
                      "It lifts containers from the night ferry at dawn.\n")  # fmt: skip
    document_id, reply_to = f"ext-{new_id()[:12]}", console.address("replies", owner=f"ext.{word}")
    request = {**envelope(user), "type": "ingest.requested", "document_id": document_id,
               "source": stored.name, "object_ref": stored.as_uri(),
               "content_type": "text/markdown", "owner": user, "reply_to": reply_to}  # fmt: skip
    await console.produce("ingest.requested", document_id, request)
    replies = await console.consume(reply_to, lambda e: e.get("document_id") == document_id)
    return Ingested(user, document_id, stored.name, word, replies)


async def test_an_ingestion_request_is_answered_on_its_reply_topic(ingested: Ingested) -> None:
    outcome = ingested.replies[-1]
    jsonschema.validate(outcome, message_schema("replies", outcome["type"]))
    assert outcome["type"] == "ingest.completed", outcome
    assert outcome["outcome"] == "ingested"
    assert outcome["chunks"] >= 1


async def test_a_chat_turn_streams_steps_and_deltas_to_the_reply_topic(
    console: Console, ingested: Ingested, llm: ScriptedLLM
) -> None:
    """A question about the ingested document: its retrieval step, the streamed answer and
    the outcome come to the reply topic the request named."""
    llm.set_script([])  # the model's default answer, whatever an earlier test scripted
    user, run = ingested.user, new_id()
    reply_to = console.address("replies", owner=f"external.{new_id()[:8]}")
    request = {**envelope(user), "type": "chat.requested", "run_id": run,
               "conversation_id": f"{user}-c1", "text": f"What does the {ingested.word} lift?",
               "reply_to": reply_to, "use_knowledge": True, "use_tools": False}  # fmt: skip
    await console.produce("chat.requested", request["conversation_id"], request)
    replies = await console.consume(
        reply_to, lambda e: e["type"] in ("run.completed", "run.failed")
    )
    for reply in replies:
        jsonschema.validate(reply, message_schema("replies", reply["type"]))
        assert reply["run_id"] == run
    kinds = [r["type"] for r in replies]
    assert kinds[-1] == "run.completed", replies
    steps = [r for r in replies if r["type"] == "run.step"]
    assert [step["kind"] for step in steps] == ["retrieval"], steps
    assert ingested.source in steps[0]["content"]
    assert "answer.delta" in kinds, kinds
    attempt = max(r["attempt"] for r in replies if r["type"] == "answer.delta")
    deltas = sorted((r["seq"], r["text"]) for r in replies
                    if r["type"] == "answer.delta" and r["attempt"] == attempt)  # fmt: skip
    assert "".join(text for _, text in deltas) == replies[-1]["text"]


async def test_a_retrieval_finds_what_was_ingested(console: Console, ingested: Ingested) -> None:
    run = new_id()
    request = {**envelope(ingested.user), "type": "rag.retrieve.requested", "run_id": run,
               "attempt": 1, "query": f"What does the {ingested.word} lift?",
               "top_k": 3}  # fmt: skip
    await console.produce("rag.retrieve.requested", run, request)
    results = await console.consume(
        console.address("rag.retrieve.completed"),
        lambda e: e.get("request_id") == request["event_id"],
    )
    result = results[-1]
    jsonschema.validate(result, message_schema("rag.retrieve.completed", result["type"]))
    assert result["run_id"] == run
    assert result["passages"], result
    assert result["passages"][0]["document_id"] == ingested.document_id
    assert ingested.word in result["passages"][0]["text"]


async def test_a_tool_call_is_answered_with_its_result(console: Console) -> None:
    catalogues = await console.consume(
        console.address("tools.catalog.updated"),
        lambda e: any(t["name"] == "get_current_time" for t in e.get("tools", [])),
    )
    tool = next(t for t in catalogues[-1]["tools"] if t["name"] == "get_current_time")
    assert "timezone" in tool["input_schema"]["properties"]
    run = new_id()
    request = {**envelope(f"ext-{new_id()[:8]}"), "type": "tools.call.requested", "run_id": run,
               "calls": [{"tool": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"},
                          "idempotency_key": f"{run}:1"}]}  # fmt: skip
    await console.produce("tools.call.requested", run, request)
    results = await console.consume(
        console.address("tools.call.completed"),
        lambda e: e.get("request_id") == request["event_id"],
    )
    completed = results[-1]
    jsonschema.validate(completed, message_schema("tools.call.completed", completed["type"]))
    [result] = completed["results"]
    assert result["tool"] == "get_current_time"
    assert result["is_error"] is False, result
    assert "Asia/Tokyo" in result["content"]
