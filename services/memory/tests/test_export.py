"""The export after memories change: an increment carries the whole current profile and
memories, so merging it never keeps what consolidation or the user has since deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from weir_common.events import Turn
from weir_memory.longterm.models import Layer
from weir_memory.sessions.export import export_user, merge

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration


async def test_a_memory_deleted_after_an_export_is_gone_from_the_merged_export(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    said = "My name is Ada and I love playing chess."
    await long_term.remember(user, "c1", Turn(run_id="r1", user=said, assistant="Hi Ada"),
                             wall.now, [])  # fmt: skip
    first = await export_user(long_term, user, since=None, now=wall.now)
    [memory] = first["memories"]
    assert "chess" in memory["content"]
    assert {row["key"] for row in first["profile"]} == {"name", "likes"}

    since = wall.now
    wall.advance(minutes=5)
    assert await long_term.semantic.delete(user, Layer(memory["type"]), memory["id"])
    assert await long_term.profile.store.delete(user, "likes")
    await long_term.remember(user, "c1", Turn(run_id="r2", user="Thanks!", assistant="Any time"),
                             wall.now, [])  # fmt: skip
    increment = await export_user(long_term, user, since=since, now=wall.now)

    merged = merge(first, increment)
    assert merged["memories"] == []
    assert [row["key"] for row in merged["profile"]] == ["name"]
    [session] = merged["sessions"]
    assert [c["user_input"] for c in session["chats"]] == [said, "Thanks!"]
    assert merged["since"] is None  # the merged file covers everything from the start
