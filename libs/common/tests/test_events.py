"""The event catalogue: one union decodes every type; bad events fail validation."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from weir_common.events import (
    EVENT_ADAPTER,
    AnswerDelta,
    ChatRequested,
    Intent,
    MemoryContextReady,
    Route,
    RouteDecided,
    decode_event,
)

pytestmark = pytest.mark.unit


def test_every_event_round_trips_through_the_union() -> None:
    chat = ChatRequested(text="你好", reply_to="r", conversation_id="c", user_id="u", run_id="r1")
    decoded = decode_event(chat.model_dump_json())
    assert decoded == chat
    assert isinstance(decoded, ChatRequested)


def test_envelope_fields_are_set_by_default() -> None:
    delta = AnswerDelta(seq=0, text="hi")
    assert len(delta.event_id) == 32
    assert delta.occurred_at.tzinfo is not None
    assert delta.schema_version == 1


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        decode_event(json.dumps({"type": "chat.exploded", "text": "x"}))


def test_invalid_body_is_rejected() -> None:
    with pytest.raises(ValidationError, match="text"):
        decode_event(json.dumps({"type": "chat.requested", "reply_to": "r"}))


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    raw = ChatRequested(text="hi", reply_to="r").model_dump(mode="json")
    raw["added_in_v2"] = {"anything": True}
    assert isinstance(EVENT_ADAPTER.validate_python(raw), ChatRequested)


def test_results_copy_the_envelope_of_their_command() -> None:
    chat = ChatRequested(text="hi", reply_to="r", run_id="r1", conversation_id="c1", user_id="u1")
    result = RouteDecided(
        request_id=chat.event_id, intent=Intent.CHAT, route=Route.PLAIN_CHAT, **chat.envelope()
    )
    assert (result.run_id, result.conversation_id, result.user_id) == ("r1", "c1", "u1")


def test_nested_context_is_validated() -> None:
    with pytest.raises(ValidationError):
        MemoryContextReady.model_validate(
            {"request_id": "x", "context": {"history": [{"user": "no run id"}]}}
        )
