"""The event contract: an AsyncAPI 3.0 document of every topic the services use.

Generated, never written by hand (`make contract` rewrites `docs/asyncapi.json`):

- what each service **receives** is read from its real broker: the subscribers its
  `create_app` registered, with the handler's docstring;
- what each principal **sends** comes from the ownership map (`weir_common.ownership`), which
  the bus enforces: `weir_common.bus.publish` refuses an event type the map does not list;
- every payload is the event catalogue's pydantic model (`weir_common.events.AnyEvent`).

Channels are named by event type (`chat.requested` at `<prefix>chat.requested`), plus
`replies` (a requester's own `reply_to` topic) and `dead-letters` (`<topic>.dlq`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from faststream.kafka import KafkaBroker
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from weir_common.bus import deadletter
from weir_common.events import AnyEvent, Event, StepResult
from weir_common.ownership import OWNERSHIP
from weir_common.topics import DLQ_SUFFIX, Topics

SERVICES = ("gateway", "harness", "router", "rag", "tools", "memory")
REPLIES = "replies"
DEAD_LETTERS = "dead-letters"
KAFKA_BINDING = "0.5.0"
DEFAULT_SERVER = "127.0.0.1:19092"

CATALOGUE: dict[str, type[Event]] = {
    model.model_fields["type"].default: model for model in get_args(get_args(AnyEvent)[0])
}
"""Every event type of the catalogue and its model."""

DESCRIPTION = """Typed events of weir over Kafka. Every event is one JSON object (its model \
below) carrying `type`, `event_id` (consumers dedupe by it), `occurred_at`, `schema_version` \
and the routing fields `run_id`, `conversation_id`, `user_id`; unknown fields are ignored, so \
events change only by addition. Each event type has its own topic, `<prefix><type>` (prefix \
`weir.`, setting `TOPIC_PREFIX`).

Requests that expect an answer name a `reply_to` topic, owned by the requester \
(`<prefix>replies.<owner>`): a chat turn's steps, answer deltas and outcome, an ingestion's \
outcome. Results of steps (`*.completed`, `*.decided`, `step.failed`) go to their own topics \
and carry `request_id`, the `event_id` of the command they answer.

Messages a consumer cannot handle are parked on `<topic>.dlq` with `x-dlq-*` headers \
(`python -m weir_deploy dlq` lists and replays them)."""


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n\n")[0].replace("\n", " ")


def _schemas() -> dict[str, Any]:
    """The JSON schema of every catalogue model and what they contain, by model name."""
    models: list[tuple[type[BaseModel], Any]] = [(m, "validation") for m in CATALOGUE.values()]
    _, top = models_json_schema(models, ref_template="#/components/schemas/{model}")
    schemas: dict[str, Any] = top["$defs"]
    return schemas


def _message(event_type: str) -> dict[str, Any]:
    model = CATALOGUE[event_type]
    key = "conversation_id" if event_type == "chat.requested" else "run_id"
    message: dict[str, Any] = {
        "name": event_type,
        "title": model.__name__,
        "summary": _first_line(model.__doc__),
        "contentType": "application/json",
        "payload": {"$ref": f"#/components/schemas/{model.__name__}"},
        "headers": {
            "type": "object",
            "properties": {"x-event-type": {"type": "string", "const": event_type}},
        },
        "bindings": {
            "kafka": {
                "key": {"type": "string", "description": f"The event's `{key}` (none if unset)."},
                "bindingVersion": KAFKA_BINDING,
            }
        },
    }
    if issubclass(model, StepResult):
        message["correlationId"] = {
            "description": "The `event_id` of the command this answers.",
            "location": "$message.payload#/request_id",
        }
    return message


def _dead_letter() -> dict[str, Any]:
    headers = (
        *(deadletter.REASON_HEADER, deadletter.ERROR_HEADER, deadletter.ORIGIN_HEADER),
        *("x-dlq-partition", "x-dlq-offset", deadletter.TRIES_HEADER, deadletter.TIME_HEADER),
    )
    return {
        "name": "dead-letter",
        "title": "DeadLetter",
        "summary": "A message its consumer could not handle, parked with the reason.",
        "description": "The body is the parked message's, unchanged (usually an event of the"
        " catalogue, or whatever failed to decode); its key and headers are kept, and"
        " `x-dlq-reason` is `invalid_event`, `handler_error` or `retries_exhausted`.",
        "payload": {"description": "The original message body, unchanged."},
        "headers": {"type": "object", "properties": {h: {"type": "string"} for h in headers}},
    }


def topic_names(sub: Any) -> list[str]:
    """The topics a FastStream subscriber reads."""
    names: list[str] = sub.topic_names
    return names


def subscribed_topics(brokers: Mapping[str, KafkaBroker]) -> dict[str, list[str]]:
    """Every topic each service's broker subscribes to, in registration order."""
    return {
        service: [topic for sub in broker.subscribers for topic in topic_names(sub)]
        for service, broker in brokers.items()
    }


def channel_of(topic: str, topics: Topics) -> str:
    """The contract's channel of a concrete topic (raises `KeyError` for an unknown one)."""
    if topic.endswith(DLQ_SUFFIX):
        return DEAD_LETTERS
    if topic.startswith(topics.reply("")):
        return REPLIES
    event_type = topic.removeprefix(topics.prefix)
    if topic.startswith(topics.prefix) and event_type in CATALOGUE:
        return event_type
    raise KeyError(f"{topic} is neither a catalogue event type's topic nor a reply topic")


def accepted_types(sub: Any) -> list[str]:
    """The event types a real FastStream subscriber's handler decodes (its payload schema)."""
    sub.schema()  # builds the handler's model
    types: list[str] = []
    for body, _ in sub.specification.get_payloads():
        if "discriminator" in body:
            types += list(body["discriminator"]["mapping"])
        else:
            types.append(body.get("properties", {}).get("type", {}).get("const", "?"))
    return types


Operation = tuple[str, str, str, tuple[str, ...], str]
"""(principal, `send` or `receive`, channel, event types, summary)."""


def _operations(brokers: Mapping[str, KafkaBroker], topics: Topics) -> Iterator[Operation]:
    for service, broker in brokers.items():  # what each real subscriber takes
        for sub in broker.subscribers:
            types = tuple(accepted_types(sub))
            for topic in topic_names(sub):
                channel = channel_of(topic, topics)
                if any(t not in CATALOGUE for t in types) or channel not in (REPLIES, *types):
                    raise KeyError(f"{service} reads {topic} as {types}")
                taken = types if channel == REPLIES else (channel,)
                yield service, "receive", channel, taken, _first_line(sub.specification.description)
        if broker.subscribers:
            yield service, "send", DEAD_LETTERS, (DEAD_LETTERS,), "Parks what it cannot handle."
    for entry in OWNERSHIP:  # what the bus lets each principal publish
        for event_type in entry.produces:
            yield entry.service, "send", event_type, (event_type,), f"Publishes {event_type}."
        if entry.replies:
            yield entry.service, "send", REPLIES, entry.replies, "Replies to requesters."


def _channels(topics: Topics) -> dict[str, dict[str, Any]]:
    channels: dict[str, dict[str, Any]] = {
        event_type: {
            "address": topics.of(event_type),
            "title": event_type,
            "description": _first_line(model.__doc__),
            "bindings": {
                "kafka": {"topic": topics.of(event_type), "bindingVersion": KAFKA_BINDING}
            },
        }
        for event_type, model in CATALOGUE.items()
    }
    channels[REPLIES] = {
        "address": topics.reply("{owner}"),
        "title": "replies",
        "description": "A requester's own topic, named as `reply_to` in its requests:"
        " the replies to them, in order per run.",
        "parameters": {"owner": {
            "description": "The requester and instance, e.g. `gateway.<instance>`, `batch.<job>`.",
            "examples": ["gateway.local", "batch.nightly"]}},
    }  # fmt: skip
    channels[DEAD_LETTERS] = {
        "address": "{topic}" + DLQ_SUFFIX,
        "title": "dead letters",
        "description": "Where a consumer parks the messages of `topic` it cannot handle.",
        "parameters": {"topic": {"description": "A topic some service consumes.",
                                 "examples": [topics.of("chat.requested")]}},
    }  # fmt: skip
    return channels


def build_document(
    brokers: Mapping[str, KafkaBroker], topics: Topics | None = None, server: str = DEFAULT_SERVER
) -> dict[str, Any]:
    """The AsyncAPI 3.0 document of the services whose real brokers are given (by name)."""
    topics = topics or Topics()
    channels = _channels(topics)
    operations: dict[str, dict[str, Any]] = {}
    messages: dict[str, Any] = {}
    for service, action, channel, types, summary in _operations(brokers, topics):
        names = [CATALOGUE[t].__name__ if t in CATALOGUE else "DeadLetter" for t in types]
        for name, event_type in zip(names, types, strict=True):
            ref = {"$ref": f"#/components/messages/{name}"}
            channels[channel].setdefault("messages", {})[name] = ref
            messages[name] = _message(event_type) if name != "DeadLetter" else _dead_letter()
        operations[f"{service}.{action}.{channel}"] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel}"},
            "messages": [{"$ref": f"#/channels/{channel}/messages/{n}"} for n in names],
            "summary": summary,
        }
    return {
        "asyncapi": "3.0.0",
        "info": {"title": "weir events", "version": "1", "description": DESCRIPTION},
        "defaultContentType": "application/json",
        "servers": {"development": {"host": server, "protocol": "kafka",
                                    "description": "The local broker of `make run`."}},
        "channels": {name: c for name, c in channels.items() if "messages" in c},
        "operations": operations,
        "components": {"messages": messages, "schemas": _schemas()},
    }  # fmt: skip


def render(document: Mapping[str, Any]) -> str:
    """The document as checked in: indented JSON with sorted keys."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def address_pattern(address: str) -> re.Pattern[str]:
    """A channel address as a pattern; a `{parameter}` matches any non-empty text."""
    parts = re.split(r"\{[^}]+\}", address)
    return re.compile(".+".join(re.escape(p) for p in parts))


def documented(document: Mapping[str, Any], topic: str) -> bool:
    """True when some channel of the document has `topic` (a concrete topic, or an address
    with `{parameters}` as the document writes it) for its address."""
    addresses = [c["address"] for c in document["channels"].values()]
    if topic in addresses:
        return True
    dead_letters = "{topic}" + DLQ_SUFFIX
    if topic.endswith(DLQ_SUFFIX):  # the dead-letter topic of a documented topic only
        parked = topic.removesuffix(DLQ_SUFFIX)
        return dead_letters in addresses and documented(document, parked)
    return any(address_pattern(a).fullmatch(topic) for a in addresses if a != dead_letters)


def published_topics(brokers: Mapping[str, KafkaBroker], topics: Topics) -> dict[str, list[str]]:
    """Every topic each principal may publish: its own event types' topics, the reply topic
    of a requester (`<prefix>replies.<owner>`), the dead-letter topics of what it reads."""
    subscribed = subscribed_topics(brokers)
    published: dict[str, list[str]] = {}
    for entry in OWNERSHIP:
        names = [topics.of(t) for t in entry.produces]
        if entry.replies:
            names.append(topics.reply("{owner}"))
        names += [t + DLQ_SUFFIX for t in subscribed.get(entry.service, [])]
        published[entry.service] = names
    return published
