"""A logged turn read with the one before it: its vector leans towards the previous turn's,
its BM25 text starts with the end of the previous turn's text."""

from __future__ import annotations

import numpy as np
import pytest

from weir_memory.log.context import in_context, tail

pytestmark = pytest.mark.unit


def test_a_turn_leans_towards_the_one_before_it_at_unit_length() -> None:
    own, previous = [1.0, 0.0], [0.0, 1.0]
    mixed = in_context(own, previous, 0.5)
    assert np.isclose(np.linalg.norm(mixed), 1.0)
    assert np.allclose(mixed, np.array([1.0, 0.5]) / np.linalg.norm([1.0, 0.5]))
    assert float(np.dot(mixed, own)) > float(np.dot(mixed, previous)) > 0  # still itself first


@pytest.mark.parametrize(
    ("previous", "weight"),
    [(None, 0.5), ([], 0.5), ([0.0, 1.0], 0.0), ([0.0, 1.0, 0.0], 0.5), ([-1.0, 0.0], 1.0)],
    ids=["first-turn", "no-vector", "weight-0", "other-dimension", "cancels-out"],
)
def test_a_turn_without_a_usable_previous_vector_keeps_its_own(
    previous: list[float] | None, weight: float
) -> None:
    assert in_context([1.0, 0.0], previous, weight) == [1.0, 0.0]


def test_the_end_of_the_previous_turn_starts_at_a_word() -> None:
    text = "Nice! Who was playing at the concert downtown?"
    assert tail(text, 200) == text
    assert tail(text, 20) == "concert downtown?"  # "the concert…" cut inside "the": dropped
    assert tail("  one two three  ", 9) == "two three"  # the cut falls between words: kept
    assert tail("abcdefghij", 4) == "ghij"  # one long word: its end
