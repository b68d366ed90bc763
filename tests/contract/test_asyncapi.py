"""The event contract (F47, issue 14): `docs/asyncapi.json`, generated from the real apps.

A change to an event, a topic, a subscriber or the ownership map changes the document, so it
shows up in review. After an intended change, regenerate it with `make contract`.

Fails when the checked-in document is stale, when a service subscribes or publishes a topic
the document lacks, when a service builds an event the ownership map does not give it (the
map is where the published side of the document comes from, and the bus refuses anything
else), and when the official AsyncAPI parser (npm `@asyncapi/parser`) reports an error.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker

from weir_common.bus import publish
from weir_common.contract import (
    CATALOGUE,
    DEAD_LETTERS,
    REPLIES,
    SERVICES,
    accepted_types,
    build_document,
    channel_of,
    documented,
    published_topics,
    render,
    subscribed_topics,
    topic_names,
)
from weir_common.events import AnswerDelta, ChatRequested, RouteRequested, RunCompleted
from weir_common.ownership import OWNERSHIP, ownership_of
from weir_common.topics import Topics

from .apps import service_brokers

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "asyncapi.json"
VALIDATOR = ROOT / "deploy" / "peers" / "validate-asyncapi.mjs"
PARSER = ROOT / "deploy" / "peers" / "node_modules" / "@asyncapi" / "parser" / "package.json"
TOPICS = Topics()


@cache
def brokers() -> dict[str, KafkaBroker]:
    return service_brokers()


@cache
def generated() -> dict[str, Any]:
    return build_document(brokers(), TOPICS)


def test_the_checked_in_contract_matches_the_code() -> None:
    text = render(generated())
    if os.environ.get("WEIR_UPDATE_CONTRACT") == "1":
        DOCUMENT.write_text(text)
    assert DOCUMENT.is_file(), "docs/asyncapi.json is missing: run `make contract`"
    assert DOCUMENT.read_text() == text, "the event contract is stale: run `make contract`"


def test_every_topic_a_service_subscribes_is_documented_with_its_payload() -> None:
    operations = generated()["operations"]
    for service, broker in brokers().items():
        assert broker.subscribers, service
        for sub in broker.subscribers:
            accepted = {CATALOGUE[t].__name__ for t in accepted_types(sub)}
            for topic in topic_names(sub):
                assert documented(generated(), topic), f"{service} reads {topic}: undocumented"
                receive = operations[f"{service}.receive.{channel_of(topic, TOPICS)}"]
                names = {m["$ref"].rsplit("/", 1)[1] for m in receive["messages"]}
                assert names <= accepted, (service, topic, names, accepted)


def test_every_topic_a_service_publishes_is_documented() -> None:
    operations = generated()["operations"]
    published = published_topics(brokers(), TOPICS)
    assert set(published) == {o.service for o in OWNERSHIP}
    for service, names in published.items():
        for topic in names:
            assert documented(generated(), topic), f"{service} publishes {topic}: undocumented"
            channel = channel_of(topic.replace("{owner}", "x"), TOPICS)
            assert f"{service}.send.{channel}" in operations, (service, topic)


def test_the_subscribers_are_what_the_ownership_map_says_each_service_consumes() -> None:
    for service, topics in subscribed_topics(brokers()).items():
        entry = ownership_of(service)
        fixed = {TOPICS.of(t) for t in entry.consumes}
        replies = {TOPICS.reply(entry.reads_replies + "local")} if entry.reads_replies else set()
        assert set(topics) == fixed | replies, service


def test_the_contract_lacks_what_no_code_uses() -> None:
    assert not documented(generated(), "weir.chat.requested.extra")
    assert not documented(generated(), "weir.answer.delta")  # a reply: no topic of its own
    assert not documented(generated(), "other.chat.requested")
    assert documented(generated(), "weir.replies.batch.job-1")
    assert documented(generated(), "weir.chat.requested.dlq")
    assert documented(generated(), "weir.replies.gateway.pod-2.dlq")
    assert not documented(generated(), "weir.unknown.type.dlq")
    with pytest.raises(KeyError):
        channel_of("weir.unknown.type", TOPICS)


def test_every_event_of_the_catalogue_is_in_the_contract() -> None:
    document = generated()
    messages = document["components"]["messages"]
    assert {m["name"] for m in messages.values()} == {*CATALOGUE, "dead-letter"}
    replies = document["channels"][REPLIES]["messages"]
    assert set(replies) == {CATALOGUE[t].__name__ for o in OWNERSHIP for t in o.replies}
    for event_type, model in CATALOGUE.items():
        schema = document["components"]["schemas"][model.__name__]
        assert schema["properties"]["type"]["const"] == event_type
    assert document["channels"][DEAD_LETTERS]["address"] == "{topic}.dlq"


# --- the published side is tied to the code -----------------------------------------------


def _constructed_events(path: Path) -> set[str]:
    """The catalogue event types a source file builds (`RunCompleted(...)` calls)."""
    by_name = {model.__name__: event_type for event_type, model in CATALOGUE.items()}
    tree = ast.parse(path.read_text(), str(path))
    return {
        by_name[node.func.id]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if node.func.id in by_name
    }


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_builds_exactly_the_events_the_ownership_map_gives_it(service: str) -> None:
    built: dict[str, set[str]] = {}
    for path in (ROOT / "services" / service / "src").rglob("*.py"):
        # the batch ingest job (`python -m weir_rag.batch`) is a principal of its own
        principal = "batch" if path.name == "batch.py" and service == "rag" else service
        built.setdefault(principal, set()).update(_constructed_events(path))
    for principal, types in built.items():
        entry = ownership_of(principal)
        assert types == {*entry.produces, *entry.replies}, principal


def _direct_publishes(path: Path) -> list[int]:
    """Lines of `<...broker...>.publish(...)` calls: a publish around the bus's helper."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if node.func.attr == "publish" and "broker" in ast.unparse(node.func.value).lower()
    ]


def test_every_service_publishes_through_the_bus_helper() -> None:
    """So the ownership check of `weir_common.bus.publish` sees every event a service sends
    (the dead-letter middleware, in the bus itself, is the one other publisher)."""
    sources = [*(ROOT / "services").glob("*/src/**/*.py"),
               *(ROOT / "libs/common/src").rglob("*.py")]  # fmt: skip
    bus = ROOT / "libs/common/src/weir_common/bus"
    around = {str(p.relative_to(ROOT)): lines for p in sources if (lines := _direct_publishes(p))}
    # the scan does find calls: the bus's own two
    assert set(around) == {str((bus / n).relative_to(ROOT)) for n in ("broker.py", "deadletter.py")}


async def test_the_bus_publishes_only_what_the_ownership_map_lists() -> None:
    broker = KafkaBroker()
    sent: list[str] = []
    reply_to = TOPICS.reply("gateway.local")

    def recorder(topic: str) -> Callable[[dict[str, Any]], None]:
        def record(body: dict[str, Any]) -> None:
            sent.append(f"{topic} {body['type']}")

        return record

    for topic in (TOPICS.of("chat.requested"), reply_to):
        broker.subscriber(topic)(recorder(topic))
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, ChatRequested(text="hi", reply_to=reply_to))
        await publish(br, TOPICS, RunCompleted(text="done"), topic=reply_to)
        with pytest.raises(ValueError, match="not published on its own topic"):
            await publish(br, TOPICS, AnswerDelta(seq=0, text="x"))
        with pytest.raises(ValueError, match="not published as a reply"):
            await publish(br, TOPICS, RouteRequested(query="q"), topic=reply_to)
    assert sent == [f"{TOPICS.of('chat.requested')} chat.requested", f"{reply_to} run.completed"]


# --- the official parser ------------------------------------------------------------------


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "node is missing: run `make setup`"
    assert PARSER.is_file(), f"{PARSER.parent} is missing: run `make setup`"
    return subprocess.run(
        [node, str(VALIDATOR), str(path)], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_official_asyncapi_parser_accepts_the_contract(tmp_path: Path) -> None:
    good, broken = tmp_path / "asyncapi.json", tmp_path / "broken.json"
    good.write_text(render(generated()))
    result = _validate(good)
    assert result.returncode == 0, result.stdout + result.stderr
    diagnostics = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(d["severity"] != 0 for d in diagnostics), diagnostics
    # the validator does fail on an error: an operation on a channel that is not there
    document = generated() | {"operations": {"x.send.nowhere": {
        "action": "send", "channel": {"$ref": "#/channels/nowhere"}}}}  # fmt: skip
    broken.write_text(render(document))
    refused = _validate(broken)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert '"severity":0' in refused.stdout
