"""Confirmation before side effects: the gate, parking a run, the user's answer, expiry.

Unit tests of `weir_harness.confirmation` and its hook in `transitions`, and tests of
`RunService` against the run store, in memory (and PostgreSQL for the tests marked `stores`):
a parked run survives a restart and runs its call exactly once on approval. The test plays
the workers; time moves by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import (
    AnswerGenerated,
    AnswerGenerateRequested,
    ChatRequested,
    Event,
    Intent,
    MemoryContext,
    MemoryContextReady,
    ReactStepDecided,
    Route,
    RouteDecided,
    RunStep,
    StepCommand,
    ToolCallResult,
    ToolConfirmationGiven,
    ToolConfirmationRequested,
    ToolInfo,
    ToolsCallCompleted,
    ToolsCallRequested,
    ToolsCatalogUpdated,
    TurnRecorded,
    new_id,
)
from weir_harness.capabilities import Capabilities
from weir_harness.confirmation import CONFIRM, Gate, Policies, gate, park, resume
from weir_harness.diagnosis import diagnose, judge
from weir_harness.models import PlannedCall, Run, RunState, RunStatus
from weir_harness.repository import RunStore
from weir_harness.service import Outgoing, RunService
from weir_harness.settings import HarnessSettings
from weir_harness.steps import CALL, GENERATE
from weir_harness.transitions import decide

STORES = ("memory",)  # and PostgreSQL for the tests marked `stores` (conftest)

REPLY_TO = "weir.reply.confirm-tests"
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
UNIT_SETTINGS = HarnessSettings(database_url="postgresql://unused", tool_confirm_timeout_s=600)


def catalogue() -> Capabilities:
    """`read` only reads; `write` changes things (the catalogue marks it `confirm`)."""
    caps = Capabilities()
    caps.update(
        ToolsCatalogUpdated(
            tools=[
                ToolInfo(name="read", server="fs"),
                ToolInfo(name="write", server="fs", confirm=True),
            ]
        )
    )
    return caps


def chat(user: str = "user-1", conversation: str | None = None) -> ChatRequested:
    return ChatRequested(text="write hello to notes.txt", reply_to=REPLY_TO, run_id=new_id(),
                         conversation_id=conversation or new_id(), user_id=user)  # fmt: skip


def planned(tool: str | None, **arguments: Any) -> ReactStepDecided:
    return ReactStepDecided(tool=tool, arguments=arguments, thought=f"use {tool}",
                            request_id="plan-1", run_id="run-1", user_id="user-1")  # fmt: skip


def unit_run() -> Run:
    request = chat()
    return Run(run_id="run-1", conversation_id="conv-1", user_id="user-1",
               status=RunStatus.RUNNING, request=request,
               state=RunState(route=Route.REACT, loop_started_at=T0))  # fmt: skip


# --- unit: the gate ----------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("tool", "rows", "expected"),
    [
        ("read", [], Gate("send")),
        ("write", [], Gate("ask", "side_effects")),
        ("unknown", [], Gate("send")),  # not in the catalogue: the tools service says so
        ("unknown", [(None, "unknown", "allow")], Gate("send", "policy")),
        ("write", [(None, "write", "allow")], Gate("send", "policy")),
        ("read", [(None, "read", "deny")], Gate("deny", "policy")),
        ("read", [(None, "read", "ask")], Gate("ask", "policy")),
        ("read", [(None, "*", "deny")], Gate("deny", "policy")),
        # this conversation's policy beats the user's policy for every conversation
        ("write", [(None, "write", "deny"), ("conv-1", "write", "allow")], Gate("send", "policy")),
        ("write", [(None, "write", "allow"), ("conv-1", "*", "ask")], Gate("ask", "side_effects")),
        # another conversation's policy does not apply
        ("write", [("conv-2", "write", "allow")], Gate("ask", "side_effects")),
    ],
)
def test_gate(tool: str, rows: list[Any], expected: Gate) -> None:
    policies = Policies.of_rows(rows, "conv-1")
    assert gate(PlannedCall(tool=tool), catalogue(), policies) == expected


@pytest.mark.unit
def test_a_confirmed_call_parks_instead_of_being_sent() -> None:
    run = unit_run()
    decision = decide(run, planned("write", path="notes.txt"), catalogue(), UNIT_SETTINGS)
    assert decision.next_step == CONFIRM
    assert run.state.pending_calls == [PlannedCall(tool="write", arguments={"path": "notes.txt"},
                                                   thought="use write", ask=True)]  # fmt: skip
    asked = park(run, run.state.pending_calls[0], catalogue(), T0, UNIT_SETTINGS)
    assert (run.status, run.step, run.pending_event_id) == (
        RunStatus.AWAITING_CONFIRMATION, CONFIRM, asked.call_id)  # fmt: skip
    assert run.deadline == asked.expires_at == T0 + timedelta(seconds=600)
    assert (asked.tool, asked.arguments, asked.server, asked.reason) == (
        "write", {"path": "notes.txt"}, "fs", "side_effects")  # fmt: skip
    assert decide(unit_run(), planned("read"), catalogue(), UNIT_SETTINGS).next_step == CALL


@pytest.mark.unit
def test_a_tool_denied_by_policy_is_never_called() -> None:
    run = unit_run()
    policies = Policies.of_rows([(None, "read", "deny")], "conv-1")
    decision = decide(run, planned("read"), catalogue(), UNIT_SETTINGS, policies)
    assert decision.next_step == GENERATE
    assert run.state.pending_calls == []
    assert run.state.observations[-1].is_error
    assert "settings deny the tool read" in run.state.observations[-1].content
    assert decision.notes == [("confirmation", {"decision": "policy_denied", "tool": "read"})]


@pytest.mark.unit
def test_resume_approved_keeps_the_call_and_does_not_charge_the_wait() -> None:
    run = unit_run()
    decide(run, planned("write"), catalogue(), UNIT_SETTINGS)
    assert run.state.pending_calls
    park(run, run.state.pending_calls[0], catalogue(), T0 + timedelta(seconds=5), UNIT_SETTINGS)
    step = resume(run, "approved", T0 + timedelta(seconds=305))
    assert step is None
    assert run.status is RunStatus.RUNNING
    assert run.state.awaiting is None
    [call] = run.state.pending_calls
    assert (call.tool, call.ask) == ("write", False)  # sent next, without asking again
    assert run.state.loop_started_at == T0 + timedelta(seconds=300)  # the wait is not loop time


@pytest.mark.unit
@pytest.mark.parametrize(("outcome", "words"), [("denied", "declined"), ("expired", "in time")])
def test_resume_denied_or_expired_observes_why(outcome: Any, words: str) -> None:
    run = unit_run()
    decide(run, planned("write"), catalogue(), UNIT_SETTINGS)
    assert run.state.pending_calls
    park(run, run.state.pending_calls[0], catalogue(), T0, UNIT_SETTINGS)
    step = resume(run, outcome, T0)
    assert step is not None
    assert words in step.content
    assert step.kind == "observation"
    assert run.state.pending_calls == []
    assert words in run.state.observations[-1].content
    assert run.state.observations[-1].is_error


@pytest.mark.unit
def test_an_expired_confirmation_needs_a_human() -> None:
    run = unit_run()
    run.status, run.state.answer = RunStatus.COMPLETED, "I could not write the file."
    payload: dict[str, Any] = {"decision": "expired", "tool": "write"}
    steps: list[dict[str, Any]] = [
        {"seq": 1, "kind": "confirmation", "step": CONFIRM, "attempt": 1, "payload": payload}
    ]
    verdict = judge(run, steps)
    assert verdict["verdict"] == "needs_human"
    assert "write" in verdict["evidence"][0]
    diagnosis = diagnose(run, steps)
    assert diagnosis["level"] == "blocked"
    assert any("expired" in hint for hint in diagnosis["hints"])
    payload["decision"] = "denied"
    assert judge(run, steps)["verdict"] != "needs_human"  # the user decided: no one else needs to


# --- integration: RunService over PostgreSQL ---------------------------------------------------


class ManualClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def service(repo: RunStore, settings: HarnessSettings, clock: ManualClock) -> RunService:
    return RunService(repo, settings, clock=clock, capabilities=catalogue())


def of_type(out: list[Outgoing], kind: type[Event]) -> list[Any]:
    return [item.event for item in out if isinstance(item.event, kind)]


def command(out: list[Outgoing]) -> StepCommand:
    commands: list[StepCommand] = of_type(out, StepCommand)
    assert len(commands) == 1, [type(i.event).__name__ for i in out]
    return commands[0]


async def to_planner(service: RunService, request: ChatRequested) -> StepCommand:
    """Start a run and answer memory and route (ReAct): the planner's command."""
    memory = command(await service.on_chat(request, None))
    ready = MemoryContextReady(context=MemoryContext(), request_id=memory.event_id,
                               **memory.envelope())  # fmt: skip
    route = command(await service.on_result(ready))
    decided = RouteDecided(intent=Intent.EXTERNAL_ACTION, route=Route.REACT, rule="test",
                           request_id=route.event_id, **route.envelope())  # fmt: skip
    return command(await service.on_result(decided))


async def plan(service: RunService, planner: StepCommand, tool: str) -> list[Outgoing]:
    decided = ReactStepDecided(tool=tool, arguments={"path": "notes.txt"}, thought="write it",
                               request_id=planner.event_id, **planner.envelope())  # fmt: skip
    return await service.on_result(decided)


async def parked(service: RunService, request: ChatRequested) -> ToolConfirmationRequested:
    out = await plan(service, await to_planner(service, request), "write")
    assert of_type(out, StepCommand) == []  # nothing is sent to the tools
    [asked] = of_type(out, ToolConfirmationRequested)
    assert [i.topic for i in out if i.event is asked] == [REPLY_TO]
    assert [s.kind for s in of_type(out, RunStep)] == ["thought", "action"]
    return asked  # type: ignore[no-any-return]


def answer(asked: ToolConfirmationRequested, approve: bool, **kw: Any) -> ToolConfirmationGiven:
    envelope = {**asked.envelope(), **{k: kw.pop(k) for k in ("user_id",) if k in kw}}
    return ToolConfirmationGiven(call_id=asked.call_id, approve=approve, **envelope, **kw)


async def load(repo: RunStore, run_id: str) -> Run:
    async with repo.transaction() as tx:
        run = await tx.get(run_id)
    assert run is not None
    return run


async def finish(service: RunService, out: list[Outgoing]) -> None:
    """Answer generation and memory; the run completes."""
    generate = command(out)
    assert isinstance(generate, AnswerGenerateRequested)
    done = AnswerGenerated(text="done", request_id=generate.event_id, **generate.envelope())
    remember = command(await service.on_result(done))
    recorded = TurnRecorded(request_id=remember.event_id, **remember.envelope())
    following = of_type(await service.on_result(recorded), StepCommand)
    assert [c for c in following if c.run_id == remember.run_id] == []  # the run is done


@pytest.mark.stores("memory", "postgres")
async def test_a_parked_run_survives_a_restart_and_runs_its_call_once_on_approval(
    service: RunService,
    repo: RunStore,
    second_repo: RunStore,
    settings: HarnessSettings,
    clock: ManualClock,
) -> None:
    request = chat()
    asked = await parked(service, request)
    assert asked.expires_at == T0 + timedelta(seconds=settings.tool_confirm_timeout_s)
    run = await load(repo, asked.run_id or "")
    assert run.status is RunStatus.AWAITING_CONFIRMATION
    assert run.deadline == asked.expires_at

    clock.now += timedelta(seconds=300)  # the harness restarts while the user thinks
    restarted = RunService(second_repo, settings, clock=clock, capabilities=catalogue())
    assert await restarted.sweep() == []  # nothing is re-sent, nothing expires
    assert await restarted.on_confirmation(answer(asked, True, user_id="someone-else")) == []
    other_call = answer(asked, True).model_copy(update={"call_id": "another"})
    assert await restarted.on_confirmation(other_call) == []
    assert (await load(second_repo, run.run_id)).status is RunStatus.AWAITING_CONFIRMATION

    approve = answer(asked, True)
    call = command(await restarted.on_confirmation(approve))
    assert isinstance(call, ToolsCallRequested)
    assert (call.calls[0].tool, call.calls[0].arguments) == ("write", {"path": "notes.txt"})
    # the same answer again, or a second approval: nothing more is sent
    assert await restarted.on_confirmation(approve) == []
    assert await restarted.on_confirmation(answer(asked, True)) == []
    assert await restarted.sweep() == []
    done = ToolsCallCompleted(results=[ToolCallResult(tool="write", content="wrote 5 bytes")],
                              request_id=call.event_id, **call.envelope())  # fmt: skip
    replanned = command(await restarted.on_result(done))
    decided = ReactStepDecided(tool=None, request_id=replanned.event_id, **replanned.envelope())
    await finish(restarted, await restarted.on_result(decided))
    steps = await second_repo.steps(run.run_id)
    sent = [s for s in steps if s["kind"] == "command" and s["step"] == CALL]
    assert len(sent) == 1
    decisions = [s["payload"]["decision"] for s in steps if s["kind"] == "confirmation"]
    assert decisions == ["asked", "approved"]
    outcome = await second_repo.outcome(run.run_id)
    assert outcome is not None
    assert outcome["verdict"]["verdict"] != "needs_human"


async def test_a_denial_ends_the_call_and_the_answer_is_told(
    service: RunService, repo: RunStore
) -> None:
    asked = await parked(service, chat())
    out = await service.on_confirmation(answer(asked, False))
    generate = command(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert "declined" in generate.observations[-1].content
    assert "declined" in of_type(out, RunStep)[0].content
    assert await service.on_confirmation(answer(asked, True)) == []  # too late to approve
    await finish(service, out)
    steps = await repo.steps(asked.run_id or "")
    assert not [s for s in steps if s["kind"] == "command" and s["step"] == CALL]


async def test_an_unanswered_confirmation_expires_as_a_denial_needing_a_human(
    service: RunService, repo: RunStore, settings: HarnessSettings, clock: ManualClock
) -> None:
    asked = await parked(service, chat())
    clock.now += timedelta(seconds=settings.tool_confirm_timeout_s - 1)
    assert await service.sweep() == []
    clock.now += timedelta(seconds=2)
    out = await service.sweep()
    generate = command(out)
    assert isinstance(generate, AnswerGenerateRequested)
    assert "in time" in generate.observations[-1].content
    assert await service.on_confirmation(answer(asked, True)) == []
    await finish(service, out)
    outcome = await repo.outcome(asked.run_id or "")
    assert outcome is not None
    assert outcome["verdict"]["verdict"] == "needs_human"


@pytest.mark.stores("memory", "postgres")
async def test_remembered_answers_become_the_users_policies(
    service: RunService, repo: RunStore
) -> None:
    conversation = new_id()
    asked = await parked(service, chat(conversation=conversation))
    out = await service.on_confirmation(answer(asked, True, remember="conversation"))
    assert isinstance(command(out), ToolsCallRequested)
    assert await repo.policies("user-1") == [
        {"conversation_id": asked.conversation_id, "client_conversation_id": None,
         "tool": "write", "decision": "allow",
         "updated_at": (await repo.policies("user-1"))[0]["updated_at"]}]  # fmt: skip
    # the next run of that conversation calls `write` without asking (after this one ends)
    sent = command(out)
    done = ToolsCallCompleted(results=[ToolCallResult(tool="write", content="ok")],
                              request_id=sent.event_id, **sent.envelope())  # fmt: skip
    replanned = command(await service.on_result(done))
    enough = ReactStepDecided(tool=None, request_id=replanned.event_id, **replanned.envelope())
    await finish(service, await service.on_result(enough))
    again = await plan(service, await to_planner(service, chat(conversation=conversation)), "write")
    assert isinstance(command(again), ToolsCallRequested)
    # another conversation still asks; a user-wide deny refuses without asking
    assert (
        of_type(await plan(service, await to_planner(service, chat()), "write"), StepCommand) == []
    )
    await repo.put_policy("user-2", None, "read", "deny")
    denied = await plan(service, await to_planner(service, chat(user="user-2")), "read")
    generate = command(denied)
    assert isinstance(generate, AnswerGenerateRequested)
    assert "settings deny" in generate.observations[-1].content
    assert await repo.delete_policy("user-2", None, "read") is True
    assert await repo.policies("user-2") == []


async def test_a_new_message_instead_of_an_answer_declines_the_call_and_queues_behind_it(
    service: RunService, repo: RunStore
) -> None:
    conversation = new_id()
    asked = await parked(service, chat(conversation=conversation))
    newer = chat(conversation=conversation)
    out = await service.on_chat(newer, None)
    generate = command(out)  # the earlier run answers; the new one waits for its turn
    assert isinstance(generate, AnswerGenerateRequested)
    assert generate.run_id == asked.run_id
    assert "new message instead of confirming" in generate.observations[-1].content
    assert (await load(repo, newer.run_id or "")).status is RunStatus.QUEUED
    assert await service.on_confirmation(answer(asked, True)) == []  # too late
    await finish(service, out)
    assert (await load(repo, newer.run_id or "")).status is RunStatus.RUNNING
    steps = await repo.steps(asked.run_id or "")
    assert not [s for s in steps if s["kind"] == "command" and s["step"] == CALL]
