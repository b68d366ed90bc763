"""One stream, many doors: every kind of frame is carried, or deliberately dropped, by each."""

from __future__ import annotations

import json

import pytest

from weir_gateway.doors import openai_frames, sse, websocket
from weir_gateway.doors.table import DOORS, Door, coverage, sample_frames
from weir_gateway.stream import FRAME_KINDS

pytestmark = pytest.mark.unit

SAMPLES = sample_frames()


def test_the_samples_cover_every_frame_kind() -> None:
    assert set(SAMPLES) == set(FRAME_KINDS)


@pytest.mark.parametrize("door", [d.name for d in DOORS])
@pytest.mark.parametrize("kind", FRAME_KINDS)
def test_each_door_carries_each_kind_or_says_why_not(door: str, kind: str) -> None:
    verdict = coverage(SAMPLES)[door][kind]
    assert verdict != "gap", f"{door} neither carries {kind} nor says why it drops it"
    if verdict.startswith("dropped"):
        assert len(verdict) > len("dropped: ") + 10, "a dropped kind says why"


@pytest.mark.parametrize("door", DOORS, ids=lambda d: d.name)
def test_a_door_drops_only_kinds_that_exist(door: Door) -> None:
    assert set(door.dropped) <= set(FRAME_KINDS)


def test_every_door_s_output_is_json_or_sse_text() -> None:
    for door in DOORS:
        for kind in FRAME_KINDS:
            encoded = door.encoder()(SAMPLES[kind])
            if encoded is not None and not isinstance(encoded, str):
                json.dumps(encoded)


def test_what_each_door_says_of_the_same_answer() -> None:
    assert websocket.encode(SAMPLES["delta"], 4) == {**SAMPLES["delta"], "seq": 4}
    assert sse.encode(SAMPLES["delta"]) == 'event: text\ndata: {"content": "Let me look. "}\n\n'
    chunk = openai_frames.Completion("r1", "c", "weir-agent").encode(SAMPLES["delta"])
    assert chunk is not None
    assert chunk["choices"][0]["delta"] == {"content": "Let me look. "}
    assert chunk["object"] == "chat.completion.chunk"
    assert chunk["id"] == "chatcmpl-r1"
