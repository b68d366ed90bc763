"""The size budget of commands: trimmed by rule until they fit one broker message."""

from __future__ import annotations

import pytest

from weir_common.events import (
    AnswerGenerateRequested,
    MemoryContext,
    Observation,
    Passage,
    ReactStepRequested,
    Turn,
)
from weir_harness.budget import KEEP_CHARS, TOP_EVIDENCE, fit, size_of

pytestmark = pytest.mark.unit

LIMIT = 100_000


def passage(i: int, text: str = "a passage of the manual " * 40) -> Passage:
    return Passage(chunk_id=f"c{i}", document_id="d", source="manual.pdf", text=text)


def generate(
    observations: list[Observation] | None = None,
    evidence: list[Passage] | None = None,
    history: list[Turn] | None = None,
) -> AnswerGenerateRequested:
    return AnswerGenerateRequested(
        query="what did the tools find?",
        reply_to="weir.reply.test",
        context=MemoryContext(history=history or [], facts=["the user lives in Oslo"]),
        observations=observations or [],
        evidence=evidence or [],
        run_id="run-1",
    )


def test_a_command_within_the_budget_is_left_alone() -> None:
    command = generate([Observation(tool="search", content="small")], [passage(1)])
    assert fit(command, LIMIT) == (command, [])


def test_a_huge_observation_is_trimmed_oldest_first_and_the_rest_kept() -> None:
    old = Observation(tool="fetch", content="x" * 300_000)
    recent = Observation(tool="search", content="the answer is 42 " * 100)
    command = ReactStepRequested(
        query="q", observations=[old, recent], model_turns_left=2, tool_calls_left=2
    )

    fitted, notes = fit(command, LIMIT)

    assert isinstance(fitted, ReactStepRequested)
    assert size_of(fitted) <= LIMIT
    first, second = fitted.observations
    assert first.content.startswith("x" * KEEP_CHARS)
    assert "trimmed" in first.content
    assert second == recent
    assert notes == ["observations trimmed: 1 (fetch, 300000 chars)"]
    assert command.observations[0] == old  # the run's own state is not touched


def test_evidence_beyond_the_top_passages_goes_next_then_history() -> None:
    observations = [Observation(tool="fetch", content="y" * 60_000) for _ in range(2)]
    evidence = [passage(i, "z" * 10_000) for i in range(10)]
    history = [Turn(run_id=f"r{i}", user="u" * 2_000, assistant="a" * 18_000) for i in range(6)]
    command = generate(observations, evidence, history)

    fitted, notes = fit(command, LIMIT)

    assert isinstance(fitted, AnswerGenerateRequested)
    assert size_of(fitted) <= LIMIT
    assert [p.chunk_id for p in fitted.evidence] == [f"c{i}" for i in range(TOP_EVIDENCE)]
    assert fitted.context.history == history[-len(fitted.context.history) :]
    assert len(fitted.context.history) < len(history)
    assert notes[0].startswith("observations trimmed: 1 (fetch, 60000 chars), 2 (fetch,")
    assert notes[1] == f"evidence: kept the top {TOP_EVIDENCE} of 10"
    assert notes[2].startswith("memory history: dropped the oldest ")


def test_non_ascii_text_is_measured_in_bytes() -> None:
    command = generate([Observation(tool="fetch", content="日本語" * 20_000)])
    assert len(command.observations[0].content) < LIMIT < size_of(command)
    fitted, notes = fit(command, LIMIT)
    assert size_of(fitted) <= LIMIT
    assert notes
