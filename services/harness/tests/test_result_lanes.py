"""The harness reads every result type in exactly one of its result consumers."""

from __future__ import annotations

from collections import Counter

import pytest

from weir_common.topics import HARNESS_RESULT_TYPES
from weir_harness.app import RESULT_LANES

pytestmark = pytest.mark.unit


def test_every_result_type_is_read_by_exactly_one_consumer() -> None:
    read = Counter(t for types in RESULT_LANES.values() for t in types)
    assert set(read) == set(HARNESS_RESULT_TYPES)
    assert set(read.values()) == {1}
