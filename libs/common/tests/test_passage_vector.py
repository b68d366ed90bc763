"""A passage vector offered from one service to another: exact numbers, taken only for its
own text, embedder and dimension."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from weir_common.events import (
    EVENT_ADAPTER,
    Intent,
    PassageVector,
    Route,
    RouteDecided,
    TurnCompleted,
)

pytestmark = pytest.mark.unit

NUMBERS = [0.1, -0.25, 3.5e-7, 1.0]


def test_the_numbers_come_back_as_float32() -> None:
    offer = PassageVector.of("e5", "hello", NUMBERS)
    assert offer.vector() == pytest.approx(NUMBERS, rel=1e-6)
    assert len(offer.data) == 24  # 16 bytes in base64


def test_only_its_text_embedder_and_dimension_take_it() -> None:
    offer = PassageVector.of("e5", "hello", NUMBERS)
    assert offer.for_text("e5", "hello", 4) == pytest.approx(NUMBERS, rel=1e-6)
    assert offer.for_text("e5", "hello ", 4) is None
    assert offer.for_text("other", "hello", 4) is None
    assert offer.for_text("e5", "hello", 384) is None


def test_malformed_data_is_no_vector() -> None:
    digest = PassageVector.of("e5", "hello", NUMBERS).text_sha256
    assert (
        PassageVector(embedder="e5", text_sha256=digest, data="!!").for_text("e5", "hello", 4)
        is None
    )
    odd = PassageVector(embedder="e5", text_sha256=digest, data="AAAAAAA=")  # 5 bytes
    assert odd.for_text("e5", "hello", 4) is None
    with pytest.raises(ValidationError):
        PassageVector(embedder="e5", text_sha256="not-a-digest", data="")


def test_it_travels_in_the_route_result_and_the_turn_command() -> None:
    offer = PassageVector.of("e5", "hello", NUMBERS)
    for event in (
        RouteDecided(
            request_id="q", intent=Intent.CHAT, route=Route.PLAIN_CHAT, message_vector=offer
        ),
        TurnCompleted(user_text="hello", assistant_text="hi", message_vector=offer),
    ):
        decoded = EVENT_ADAPTER.validate_json(event.model_dump_json())
        assert decoded.message_vector == offer  # type: ignore[union-attr]
