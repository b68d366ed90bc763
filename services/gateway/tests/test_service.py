"""Assembling a streamed answer: order, dedupe, restarts, routing to the right socket."""

from __future__ import annotations

import asyncio

import pytest

from weir_common.events import AnswerDelta, ConversationTitled, RunCompleted, RunFailed, RunStep
from weir_gateway.service import ReplyHub, internal_conversation_id
from weir_gateway.stream import RunStream

pytestmark = pytest.mark.unit


def _delta(seq: int, text: str, attempt: int = 1) -> AnswerDelta:
    return AnswerDelta(seq=seq, text=text, attempt=attempt, run_id="r1")


def test_deltas_out_of_order_are_sent_in_order() -> None:
    stream = RunStream("r1", "c", None)
    assert stream.accept(_delta(1, "b")) == []
    frames = stream.accept(_delta(0, "a"))
    assert [(f["index"], f["text"]) for f in frames] == [(0, "a"), (1, "b")]


def test_duplicate_deltas_are_dropped() -> None:
    stream = RunStream("r1", "c", None)
    stream.accept(_delta(0, "a"))
    assert stream.accept(_delta(0, "a")) == []


def test_a_new_attempt_resets_the_answer_and_old_attempts_are_ignored() -> None:
    stream = RunStream("r1", "c", None)
    stream.accept(_delta(0, "half an ans"))
    frames = stream.accept(_delta(0, "Fresh", attempt=2))
    assert [f["type"] for f in frames] == ["reset", "delta"]
    assert stream.accept(_delta(1, "stale", attempt=1)) == []


def test_replies_reach_only_the_connection_that_asked() -> None:
    hub = ReplyHub()
    mine: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    other: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", "m1"), mine)
    hub.expect(RunStream("r2", "c", "m2"), other)
    hub.dispatch(_delta(0, "hi"))
    hub.dispatch(RunCompleted(text="hi", run_id="r1"))
    hub.dispatch(RunCompleted(text="unknown run", run_id="r9"))
    frames = [mine.get_nowait(), mine.get_nowait()]
    assert [f["type"] for f in frames] == ["delta", "done"]
    assert frames[1]["id"] == "m1"
    assert other.empty()


def test_failed_run_becomes_an_error_frame() -> None:
    hub = ReplyHub()
    box: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", None), box)
    raw = "memory.context.requested failed after 1 attempt(s): milvus: MilvusException: <x>"
    hub.dispatch(RunFailed(code="step_failed", reason=raw, run_id="r1"))
    frame = box.get_nowait()
    assert (frame["type"], frame["code"], frame["message"]) == (
        "error",
        "step_failed",
        "could not read memory (tried once); the run failed — try again later",
    )


def test_conversation_ids_are_scoped_to_their_user() -> None:
    assert internal_conversation_id("alice", "c1") != internal_conversation_id("bob", "c1")
    assert internal_conversation_id("alice", "c1") == internal_conversation_id("alice", "c1")


def test_a_resumed_stream_goes_on_after_the_last_piece_the_client_had() -> None:
    """Replayed from the reply topic and heard live: each piece after `after` goes out once."""
    stream = RunStream("r1", "c", None, next_seq=3)  # the client had pieces 0..2
    sent = [f for seq in range(5) for f in stream.accept(_delta(seq, f"p{seq}"))]
    assert [(f["index"], f["text"]) for f in sent] == [(3, "p3"), (4, "p4")]
    assert stream.accept(_delta(4, "p4")) == []  # the live copy of a replayed piece


def test_a_resumed_stream_of_a_later_attempt_skips_the_earlier_ones() -> None:
    stream = RunStream("r1", "c", None, attempt=2, next_seq=1)
    assert stream.accept(_delta(5, "stale", attempt=1)) == []
    assert [f["index"] for f in stream.accept(_delta(1, "next", attempt=2))] == [1]


def test_a_step_heard_twice_is_sent_once() -> None:
    hub = ReplyHub()
    box: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", None), box)
    step = RunStep(kind="retrieval", content="[1] a passage", run_id="r1")
    hub.dispatch(step)
    hub.dispatch(step)  # replayed from the reply topic, then live
    assert box.qsize() == 1


def test_a_run_past_its_deadline_gets_one_error_frame() -> None:
    hub = ReplyHub()
    box: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", "m1", started_at=100.0), box)
    hub.expect(RunStream("r2", "c", "m2", started_at=150.0), box)
    assert hub.expire(60, now=170.0) == ["r1"]
    frame = box.get_nowait()
    assert (frame["type"], frame["code"], frame["run_id"], frame["id"]) == (
        "error",
        "deadline",
        "r1",
        "m1",
    )
    assert not hub.following("r1")
    assert hub.following("r2")
    hub.dispatch(RunCompleted(text="too late", run_id="r1"))  # the connection was told already
    assert box.empty()


def test_a_finished_run_ends_once_whichever_comes_first() -> None:
    hub = ReplyHub()
    box: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", None), box)
    hub.dispatch(RunCompleted(text="live", run_id="r1"))
    assert not hub.finish("r1", {"type": "done", "run_id": "r1", "text": "from the record"})
    assert [box.get_nowait()["text"]] == ["live"]
    assert box.empty()


def test_only_runs_quiet_for_a_while_are_looked_up_and_each_once_per_period() -> None:
    hub = ReplyHub()
    box: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.expect(RunStream("r1", "c", None, started_at=100.0), box)
    hub.expect(RunStream("r2", "c", None, started_at=100.0), box)
    hub.dispatch(_delta(0, "hi").model_copy(update={"run_id": "r2"}))  # r2 is heard now
    assert [s.run_id for s in hub.quiet(10, now=111.0)] == ["r1"]
    assert hub.quiet(10, now=115.0) == []  # r1 was just looked at
    assert [s.run_id for s in hub.quiet(10, now=121.0)] == ["r1"]


def test_a_title_reaches_every_open_socket_of_its_user_only() -> None:
    hub = ReplyHub()
    first: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    second: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    stranger: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    hub.connect("ada", first)
    hub.connect("ada", second)
    hub.connect("bob", stranger)
    titled = ConversationTitled(
        client_conversation_id="c1", title="Kyoto in spring", user_id="ada", run_id="r1"
    )
    hub.dispatch(titled)
    expected = {"type": "title", "conversation_id": "c1", "title": "Kyoto in spring"}
    assert first.get_nowait() == expected
    assert second.get_nowait() == expected
    assert stranger.empty()
    hub.forget(second)  # a closed socket just misses the next one
    hub.dispatch(titled)
    assert first.get_nowait() == expected
    assert second.empty()
