"""Unit tests of the plain-chat route as data: `build_command`, `capability_notes`, `NEXT_STEP`."""

from __future__ import annotations

import pytest

from weir_common.events import (
    AnswerGenerateRequested,
    ChatRequested,
    Intent,
    MemoryContext,
    MemoryContextRequested,
    Route,
    RouteRequested,
    Turn,
    TurnCompleted,
)
from weir_harness.models import Run, RunState, RunStatus
from weir_harness.steps import FIRST_STEP, NEXT_STEP, build_command, capability_notes

pytestmark = pytest.mark.unit

KB_NOTE = "knowledge base is not connected"
TOOLS_NOTE = "No tools are connected"


def _run(*, private: bool = False, state: RunState | None = None) -> Run:
    request = ChatRequested(
        text="what is weir?",
        reply_to="weir.reply.unit",
        private=private,
        run_id="run-1",
        conversation_id="conv-1",
        user_id="user-1",
    )
    return Run(
        run_id="run-1",
        conversation_id="conv-1",
        user_id="user-1",
        status=RunStatus.RUNNING,
        request=request,
        state=state or RunState(),
    )


def _assert_envelope(command: object) -> None:
    assert getattr(command, "run_id", None) == "run-1"
    assert getattr(command, "conversation_id", None) == "conv-1"
    assert getattr(command, "user_id", None) == "user-1"


def test_route_table_is_the_plain_chat_chain() -> None:
    chain = [FIRST_STEP]
    results = {
        "memory.context.requested": "memory.context.ready",
        "route.requested": "route.decided",
        "answer.generate.requested": "answer.generated",
        "turn.completed": "turn.recorded",
    }
    while (following := NEXT_STEP[results[chain[-1]]]) is not None:
        chain.append(following)
    assert chain == [
        "memory.context.requested",
        "route.requested",
        "answer.generate.requested",
        "turn.completed",
    ]


@pytest.mark.parametrize("private", [False, True])
def test_memory_context_command(private: bool) -> None:
    command = build_command(_run(private=private), FIRST_STEP, 1, rag=False, tools=False)
    assert isinstance(command, MemoryContextRequested)
    assert command.query == "what is weir?"
    assert command.private is private
    assert command.attempt == 1
    _assert_envelope(command)


def test_route_command_carries_the_attempt() -> None:
    command = build_command(_run(), "route.requested", 2, rag=False, tools=False)
    assert isinstance(command, RouteRequested)
    assert command.query == "what is weir?"
    assert command.attempt == 2
    _assert_envelope(command)


def test_every_build_gets_a_new_event_id() -> None:
    run = _run()
    first = build_command(run, "route.requested", 1, rag=False, tools=False)
    again = build_command(run, "route.requested", 1, rag=False, tools=False)
    assert first.event_id != again.event_id


def test_generate_command_carries_context_intent_route_and_reply_to() -> None:
    context = MemoryContext(
        history=[Turn(run_id="r0", user="hi", assistant="hello")],
        summary="they greeted",
        facts=["likes tea"],
    )
    state = RunState(context=context, intent=Intent.KNOWLEDGE, route=Route.RAG, rule="kb")
    command = build_command(
        _run(state=state), "answer.generate.requested", 1, rag=False, tools=False
    )
    assert isinstance(command, AnswerGenerateRequested)
    assert command.query == "what is weir?"
    assert command.reply_to == "weir.reply.unit"
    assert command.context == context
    assert command.intent is Intent.KNOWLEDGE
    assert command.route is Route.RAG
    assert len(command.capability_notes) == 1
    assert KB_NOTE in command.capability_notes[0]
    _assert_envelope(command)


def test_generate_command_defaults_without_earlier_results() -> None:
    command = build_command(_run(), "answer.generate.requested", 1, rag=False, tools=False)
    assert isinstance(command, AnswerGenerateRequested)
    assert command.context == MemoryContext()
    assert command.intent is Intent.CHAT
    assert command.route is Route.PLAIN_CHAT
    assert command.capability_notes == []


@pytest.mark.parametrize("private", [False, True])
def test_turn_completed_command(private: bool) -> None:
    state = RunState(answer="weir is a platform")
    command = build_command(
        _run(private=private, state=state), "turn.completed", 1, rag=False, tools=False
    )
    assert isinstance(command, TurnCompleted)
    assert command.user_text == "what is weir?"
    assert command.assistant_text == "weir is a platform"
    assert command.private is private
    _assert_envelope(command)


def test_turn_completed_without_answer_sends_empty_text() -> None:
    command = build_command(_run(), "turn.completed", 1, rag=False, tools=False)
    assert isinstance(command, TurnCompleted)
    assert command.assistant_text == ""


def test_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown step"):
        build_command(_run(), "rag.retrieve.requested", 1, rag=False, tools=False)


@pytest.mark.parametrize(
    ("route", "rag", "tools", "expected"),
    [
        (None, False, False, []),
        (Route.PLAIN_CHAT, False, False, []),
        (Route.RAG, False, False, [KB_NOTE]),
        (Route.RAG, True, False, []),
        (Route.RAG, False, True, [KB_NOTE]),
        (Route.SINGLE_TOOL, False, False, [TOOLS_NOTE]),
        (Route.SINGLE_TOOL, False, True, []),
        (Route.SINGLE_TOOL, True, False, [TOOLS_NOTE]),
        (Route.REACT, False, False, [TOOLS_NOTE]),
        (Route.REACT, True, True, []),
    ],
)
def test_capability_notes(route: Route | None, rag: bool, tools: bool, expected: list[str]) -> None:
    notes = capability_notes(route, rag=rag, tools=tools)
    assert len(notes) == len(expected)
    for note, fragment in zip(notes, expected, strict=True):
        assert fragment in note
