"""The "forget me" tombstone rule (memory's turns, the knowledge service's ingestions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from weir_common.tombstone import forgotten

pytestmark = pytest.mark.unit

AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_user_never_forgotten_keeps_everything() -> None:
    assert not forgotten(AT, None)


def test_what_happened_before_or_at_the_tombstone_is_forgotten() -> None:
    assert forgotten(AT - timedelta(microseconds=1), AT)
    assert forgotten(AT, AT), "the forget wins a tie"


def test_what_happened_after_the_tombstone_is_kept() -> None:
    assert not forgotten(AT + timedelta(microseconds=1), AT)
