"""One conformance suite for both run stores: the in-memory one (unit tier) and PostgreSQL
(integration tier, a fresh database per test). Both must behave the same in everything the
run service, the API and the housekeeping rely on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import ChatRequested, RunCompleted, new_id
from weir_harness.models import Run, RunStatus
from weir_harness.repository import MemoryRunStore, RunRepository, RunStore
from weir_harness.repository.memory_tables import MemoryDatabase
from weir_harness.run_list import RunQuery

STORES = ("memory", "postgres")

REPLY_TO = "weir.reply.store-tests"
NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def make_run(
    conversation: str = "c1",
    *,
    user: str | None = "user-1",
    status: RunStatus = RunStatus.QUEUED,
    private: bool = False,
    text: str = "what is weir?",
) -> Run:
    run_id = new_id()
    request = ChatRequested(
        text=text,
        reply_to=REPLY_TO,
        private=private,
        run_id=run_id,
        conversation_id=conversation,
        user_id=user,
    )
    return Run(
        run_id=run_id, conversation_id=conversation, user_id=user, status=status, request=request
    )


async def put(repo: RunStore, *runs: Run) -> None:
    async with repo.transaction() as tx:
        for run in runs:
            assert await tx.insert(run)
            await tx.add_step(run, "request", run.request.event_id, {"text": run.request.text})


async def load(repo: RunStore, run_id: str) -> Run | None:
    async with repo.transaction() as tx:
        return await tx.get(run_id)


@pytest.fixture
async def neighbour(
    store_kind: str, store_url: str, memory_database: MemoryDatabase
) -> AsyncIterator[RunStore]:
    """A store of another deployment (topic prefix) over the same database."""
    store: RunStore = (
        RunRepository(store_url, "other.")
        if store_kind == "postgres"
        else MemoryRunStore(memory_database, "other.")
    )
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def test_an_event_is_processed_once(repo: RunStore) -> None:
    async with repo.transaction() as tx:
        assert await tx.first_time("e1")
        assert not await tx.first_time("e1")
    async with repo.transaction() as tx:
        assert not await tx.first_time("e1")
        assert await tx.first_time("e2")


async def test_a_result_reads_its_run_only_the_first_time(repo: RunStore) -> None:
    run = make_run()
    await put(repo, run)
    async with repo.transaction() as tx:
        assert await tx.first_get("r1", run.run_id) == run
        assert await tx.first_get("r1", run.run_id) is None
        assert await tx.first_get("r2", "nobody") is None
    async with repo.transaction() as tx:
        assert await tx.first_get("r1", run.run_id) is None
        assert not await tx.first_time("r2")  # recorded even though the run was missing


async def test_a_saved_run_is_read_back_within_its_transaction(repo: RunStore) -> None:
    run = make_run()
    other = make_run("c2")
    await put(repo, run, other)
    async with repo.transaction() as tx:
        loaded = await tx.get(run.run_id)
        assert loaded is not None
        loaded.status, loaded.step = RunStatus.RUNNING, "route.requested"
        await tx.save(loaded)
        loaded.attempt = 1
        await tx.save(loaded)  # the latest snapshot of a run saved twice wins
        await tx.add_step(loaded, "command", "c-1", {"n": 1})
        other.status = RunStatus.RUNNING
        await tx.save(other)
        assert await tx.get(run.run_id) == loaded
        assert [s["kind"] for s in await tx.step_log(run.run_id)] == ["request", "command"]
    assert await load(repo, run.run_id) == loaded
    assert (await load(repo, other.run_id)) == other


async def test_a_run_round_trips_and_is_inserted_once(repo: RunStore) -> None:
    run = make_run()
    await put(repo, run)
    async with repo.transaction() as tx:
        assert not await tx.insert(run)
        assert await tx.get("nobody") is None
        loaded = await tx.get(run.run_id)
    assert loaded == run
    assert loaded is not run
    assert loaded is not None
    loaded.status, loaded.step, loaded.attempt = RunStatus.RUNNING, "route.requested", 2
    loaded.deadline = NOW
    loaded.state.model_turns = 3
    async with repo.transaction() as tx:
        await tx.save(loaded)
    assert await load(repo, run.run_id) == loaded


async def test_the_step_log_is_appended_in_order(repo: RunStore) -> None:
    run = make_run()
    await put(repo, run)
    run.step, run.attempt = "route.requested", 2
    async with repo.transaction() as tx:
        await tx.add_step(run, "command", "e1", {"n": 1})
        await tx.add_step(run, "budget", "e2", {"n": 2}, "plan")
    log = await repo.steps(run.run_id)
    assert [(s["seq"], s["step"], s["attempt"], s["kind"], s["event_id"]) for s in log] == [
        (1, "", 0, "request", run.request.event_id),
        (2, "route.requested", 2, "command", "e1"),
        (3, "plan", 2, "budget", "e2"),
    ]
    assert log[1]["payload"] == {"n": 1}
    assert isinstance(log[1]["created_at"], datetime)
    assert await repo.steps("nobody") == []
    found = await repo.record(run.run_id)
    assert found is not None
    assert found[0].run_id == run.run_id
    assert found[1] == log
    assert await repo.record("nobody") is None


async def test_a_failed_transaction_leaves_nothing(repo: RunStore) -> None:
    run = make_run()

    async def crash() -> None:
        async with repo.transaction() as tx:
            assert await tx.first_time("e1")
            await tx.insert(run)
            await tx.enqueue(RunCompleted(text="done", **run.request.envelope()), REPLY_TO, None)
            raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError, match="crash before commit"):
        await crash()
    assert await load(repo, run.run_id) is None
    assert await repo.unpublished() == []
    async with repo.transaction() as tx:
        assert await tx.first_time("e1")


async def test_conversation_queries(repo: RunStore) -> None:
    first, second, third = make_run(), make_run(), make_run()
    elsewhere = make_run("c2", status=RunStatus.AWAITING_CONFIRMATION)
    await put(repo, first)
    await put(repo, second)
    await put(repo, third, elsewhere)
    async with repo.transaction() as tx:
        await tx.lock_conversation("c1")
        assert not await tx.has_active("c1", other_than=first.run_id)
        assert await tx.awaiting_confirmation("c1") is None
        assert await tx.next_queued("c1") == first
        first.status = RunStatus.AWAITING_CONFIRMATION
        await tx.save(first)
        assert await tx.awaiting_confirmation("c1") == first
        assert await tx.has_active("c1", other_than=second.run_id)
        assert not await tx.has_active("c1", other_than=first.run_id)
        assert await tx.next_queued("c1") == second
        assert await tx.awaiting_confirmation("c2") == elsewhere
        assert await tx.next_queued("c3") is None


async def test_due_runs_are_this_deployments_late_ones(repo: RunStore, neighbour: RunStore) -> None:
    late, retry, early, queued = (make_run(f"c{i}", status=RunStatus.RUNNING) for i in range(4))
    late.deadline, early.deadline = NOW - timedelta(seconds=1), NOW + timedelta(seconds=1)
    retry.retry_at, queued.status, queued.deadline = NOW, RunStatus.QUEUED, NOW
    theirs = make_run("c9", status=RunStatus.RUNNING)
    theirs.deadline = NOW - timedelta(seconds=5)
    await put(repo, retry, late, early, queued)
    await put(neighbour, theirs)
    async with repo.transaction() as tx:
        assert [run.run_id for run in await tx.due(NOW)] == [late.run_id, retry.run_id]
        assert [run.run_id for run in await tx.due(NOW, limit=1)] == [late.run_id]
    async with neighbour.transaction() as tx:
        assert [run.run_id for run in await tx.due(NOW)] == [theirs.run_id]
    assert await repo.any_due(NOW)
    assert not await repo.any_due(NOW - timedelta(seconds=2)), "only runs late by then"


async def test_nothing_is_due_in_an_idle_deployment(repo: RunStore, neighbour: RunStore) -> None:
    early, queued = (make_run(f"c{i}", status=RunStatus.RUNNING) for i in range(2))
    early.deadline = NOW + timedelta(seconds=1)
    queued.status, queued.deadline = RunStatus.QUEUED, NOW
    theirs = make_run("c9", status=RunStatus.RUNNING)
    theirs.deadline = NOW - timedelta(seconds=5)
    await put(repo, early, queued)
    await put(neighbour, theirs)
    assert not await repo.any_due(NOW)
    assert await neighbour.any_due(NOW)


async def test_a_transaction_reads_the_steps_and_events_it_added(repo: RunStore) -> None:
    """Steps of two runs and their events, added between reads of one transaction (the
    PostgreSQL store writes them in one statement before its next one): each read sees them,
    and each run's steps are numbered in the order they were added."""
    run, other = make_run(), make_run("c2")
    async with repo.transaction() as tx:
        assert await tx.insert(run)
        await tx.add_step(run, "request", "r1", {"n": 1})
        await tx.add_step(run, "command", "r2", {"n": 2})
        await tx.enqueue(run.request, None, None)
        assert [s["event_id"] for s in await tx.step_log(run.run_id)] == ["r1", "r2"]
        assert await tx.insert(other)
        await tx.add_step(other, "request", "o1", {})
        await tx.add_step(run, "result", "r3", {"n": 3})
        await tx.enqueue(other.request, REPLY_TO, "tp")
        assert await tx.get(other.run_id) is not None
        await tx.add_step(other, "command", "o2", {})
    assert [(s["seq"], s["event_id"]) for s in await repo.steps(run.run_id)] == [
        (1, "r1"), (2, "r2"), (3, "r3")]  # fmt: skip
    assert [(s["seq"], s["event_id"]) for s in await repo.steps(other.run_id)] == [
        (1, "o1"), (2, "o2")]  # fmt: skip
    rows = await repo.unpublished()
    assert [(r["run_id"], r["topic"]) for r in rows] == [
        (run.run_id, None), (other.run_id, REPLY_TO)]  # fmt: skip


async def test_the_outbox_holds_each_deployments_rows_in_order(
    repo: RunStore, neighbour: RunStore
) -> None:
    run, other = make_run(), make_run("c2")
    await put(repo, run)
    await put(neighbour, other)
    done = RunCompleted(text="done", **run.request.envelope())
    async with repo.transaction() as tx:
        await tx.enqueue(run.request, None, "tp-1")
        await tx.enqueue(done, REPLY_TO, None)
    async with neighbour.transaction() as tx:
        await tx.enqueue(other.request, None, None)
    rows = await repo.unpublished()
    assert [(r["run_id"], r["topic"], r["traceparent"]) for r in rows] == [
        (run.run_id, None, "tp-1"),
        (run.run_id, REPLY_TO, None),
    ]
    assert rows[1]["event"] == done.model_dump(mode="json")
    assert [r["run_id"] for r in await neighbour.unpublished()] == [other.run_id]


async def test_an_ended_run_has_its_outcome(repo: RunStore) -> None:
    run = make_run()
    await put(repo, run)
    outcome = await repo.outcome(run.run_id)
    assert outcome is not None
    assert outcome["verdict"] is None
    assert outcome["ended_at"] is None
    verdict = {"verdict": "answered", "evidence": ["a"]}
    async with repo.transaction() as tx:
        await tx.end(run.run_id, {"steps": 1}, verdict)
    outcome = await repo.outcome(run.run_id)
    assert outcome is not None
    assert outcome["diagnosis"] == {"steps": 1}
    assert outcome["verdict"] == verdict
    assert outcome["ended_at"] >= outcome["created_at"]
    assert outcome["steps_pruned_at"] is None
    assert await repo.outcome("nobody") is None


async def test_tool_policies(repo: RunStore) -> None:
    run = make_run()
    await put(repo, run)
    await repo.put_policy("user-1", None, "write", "deny")
    await repo.put_policy("user-1", "c1", "write", "allow", "client-c1")
    await repo.put_policy("user-1", "c2", "read", "deny", "client-c2")
    await repo.put_policy("user-1", None, "fetch", "ask", "ignored")
    await repo.put_policy("user-2", None, "read", "allow")
    async with repo.transaction() as tx:
        policies = await tx.tool_policies(run)
        await tx.put_policy("user-1", None, "write", "allow")  # an update, not a second row
        assert (await tx.tool_policies(make_run(user=None))).decision("write") is None
    assert policies.decision("write") == "allow"  # the conversation's own wins
    assert policies.decision("read") is None  # another conversation's
    keys = ("conversation_id", "client_conversation_id", "tool", "decision")
    rows = [tuple(row[k] for k in keys) for row in await repo.policies("user-1")]
    assert rows == [
        (None, None, "fetch", "ask"),
        (None, None, "write", "allow"),
        ("c1", "client-c1", "write", "allow"),
        ("c2", "client-c2", "read", "deny"),
    ]
    assert await repo.delete_policy("user-1", "c2", "read")
    assert not await repo.delete_policy("user-1", "c2", "read")
    assert not await repo.delete_policy("user-1", "c1", "read")
    assert len(await repo.policies("user-1")) == 3


async def test_forgetting_a_user_deletes_their_runs_steps_outbox_and_policies(
    repo: RunStore,
) -> None:
    mine, theirs = make_run(), make_run("c2", user="user-2")
    await put(repo, mine, theirs)
    async with repo.transaction() as tx:
        await tx.enqueue(mine.request, None, None)
        await tx.enqueue(theirs.request, None, None)
    await repo.put_policy("user-1", None, "write", "deny")
    await repo.put_policy("user-2", None, "write", "deny")
    assert await repo.forget_user("user-1") == 1
    assert await repo.record(mine.run_id) is None
    assert await repo.steps(mine.run_id) == []
    assert [r["run_id"] for r in await repo.unpublished()] == [theirs.run_id]
    assert await repo.policies("user-1") == []
    assert len(await repo.policies("user-2")) == 1
    assert await repo.record(theirs.run_id) is not None
    assert await repo.forget_user("user-1") == 0


async def _ended(repo: RunStore, *runs: Run) -> None:
    async with repo.transaction() as tx:
        for run in runs:
            run.status = RunStatus.COMPLETED
            await tx.save(run)
            await tx.end(run.run_id, {}, {"verdict": "answered", "evidence": []})


async def test_private_text_is_scrubbed_once_after_its_retention(repo: RunStore) -> None:
    private, public, running = make_run(private=True), make_run("c2"), make_run("c3", private=True)
    await put(repo, private, public, running)
    await _ended(repo, private, public)
    assert await repo.scrub_private(retention_s=3600) == 0
    assert await repo.scrub_private(retention_s=0) == 1
    assert await repo.scrub_private(retention_s=0) == 0
    assert [s["payload"] for s in await repo.steps(private.run_id)] == [{"scrubbed": True}]
    assert [s["payload"] for s in await repo.steps(public.run_id)] == [{"text": "what is weir?"}]
    assert [s["payload"] for s in await repo.steps(running.run_id)] == [{"text": "what is weir?"}]


async def test_old_step_payloads_are_pruned_once(repo: RunStore) -> None:
    old, running = make_run(), make_run("c2")
    await put(repo, old, running)
    await _ended(repo, old)
    assert await repo.prune_steps(retention_days=1) == 0
    assert await repo.prune_steps(retention_days=0) == 1
    assert await repo.prune_steps(retention_days=0) == 0
    assert [s["payload"] for s in await repo.steps(old.run_id)] == [{"pruned": True}]
    assert [s["payload"] for s in await repo.steps(running.run_id)] == [{"text": "what is weir?"}]
    outcome = await repo.outcome(old.run_id)
    assert outcome is not None
    assert outcome["steps_pruned_at"] is not None
    assert outcome["verdict"] == {"verdict": "answered", "evidence": []}


def _ids(page: list[dict[str, Any]]) -> list[str]:
    return [item["run_id"] for item in page]


async def test_runs_are_listed_recent_first_with_filters_and_pages(repo: RunStore) -> None:
    runs = [make_run(f"c{i % 2}", user=f"user-{i % 3}", text=f"question {i}") for i in range(5)]
    secret = make_run("c9", private=True)
    for run in [*runs, secret]:
        await put(repo, run)  # one transaction each: increasing created_at
    await _ended(repo, runs[1])
    newest_first = _ids([{"run_id": r.run_id} for r in reversed([*runs, secret])])
    page, cursor = await repo.list_runs(RunQuery(limit=4))
    assert _ids(page) == newest_first[:4]
    assert cursor is not None
    rest, last = await repo.list_runs(RunQuery(limit=4, before=cursor))
    assert _ids(rest) == newest_first[4:]
    assert last is None
    assert page[0]["text_preview"] is None  # a private run's text is not listed
    assert page[1]["text_preview"] == "question 4"
    assert page[1]["verdict"] is None
    by_user = (await repo.list_runs(RunQuery(user="user-2")))[0]
    assert _ids(by_user) == [runs[2].run_id]
    in_c1 = (await repo.list_runs(RunQuery(conversation="c1")))[0]
    assert _ids(in_c1) == [runs[3].run_id, runs[1].run_id]
    done = (await repo.list_runs(RunQuery(status=["completed"], verdict="answered")))[0]
    assert _ids(done) == [runs[1].run_id]
    assert done[0]["verdict"] == {"verdict": "answered", "evidence": []}
    assert set(done[0]) == {
        "run_id", "user_id", "conversation_id", "status", "created_at", "ended_at", "route",
        "intent", "diagnosis", "verdict", "text_preview",
    }  # fmt: skip
    future = (await repo.list_runs(RunQuery(since=datetime.now(UTC) + timedelta(hours=1))))[0]
    assert future == []
