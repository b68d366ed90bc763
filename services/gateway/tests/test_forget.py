""" "Forget me" at the edge: every owner is called in turn with memory's tombstone; a failed
part is a 503 naming it, and calling again finishes the job."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import HTTPException
from starlette.datastructures import State

from weir_gateway.forget import forget_user

pytestmark = pytest.mark.unit

AT = "2026-01-01T12:00:00+00:00"
Call = tuple[str, str, dict[str, Any]]
ANSWERS: dict[str, dict[str, Any]] = {
    "/memory/users/a%2Fb": {"user_id": "a/b", "forgotten_at": AT, "deleted": {"memory_items": 2}},
    "/internal/users/a%2Fb/documents": {"user_id": "a/b", "forgotten_at": AT, "documents": 1,
                                        "chunks": 4, "files": 1},
    "/internal/users/a%2Fb/calls": {"user_id": "a/b", "calls_deleted": 3},
    "/users/a%2Fb/runs": {"user_id": "a/b", "runs_deleted": 5},
}  # fmt: skip


class Owner:
    """An internal client that records its calls and answers from `ANSWERS` (or fails)."""

    def __init__(
        self,
        calls: list[Call],
        down: bool = False,
        deployed: bool = True,
    ) -> None:
        self.calls, self.down, self.deployed = calls, down, deployed

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.calls.append((method, path, kwargs))
        if self.down:
            raise HTTPException(503, "the tools service is unavailable: ConnectError")
        return ANSWERS[path]


def state(calls: list[Call], tools_down: bool = False, rag: bool = True) -> State:
    return State({
        "memory": Owner(calls), "forget_documents": Owner(calls, deployed=rag),
        "forget_tools": Owner(calls, down=tools_down), "runs": Owner(calls),
    })  # fmt: skip


async def test_every_owner_is_called_in_turn_with_memorys_tombstone() -> None:
    calls: list[Call] = []
    done = await forget_user(state(calls), "a/b")
    assert [(m, p) for m, p, _ in calls] == [("DELETE", p) for p in ANSWERS]
    assert calls[1][2] == {"params": {"forgotten_at": AT}}
    assert done == {
        "user_id": "a/b", "forgotten_at": AT, "deleted": {"memory_items": 2},
        "documents": {"documents": 1, "chunks": 4, "files": 1}, "tool_calls_deleted": 3,
        "runs_deleted": 5, "not_deployed": [],
    }  # fmt: skip


async def test_a_failed_part_is_a_503_naming_it_and_the_rest_waits() -> None:
    calls: list[Call] = []
    with pytest.raises(HTTPException) as failed:
        await forget_user(state(calls, tools_down=True), "a/b")
    assert failed.value.status_code == 503
    assert "tool results" in failed.value.detail
    assert "call it again" in failed.value.detail
    assert "/users/a%2Fb/runs" not in [p for _, p, _ in calls]
    calls.clear()
    assert (await forget_user(state(calls), "a/b"))["runs_deleted"] == 5, "again: finished"


async def test_a_service_this_deployment_does_not_run_is_listed_not_called() -> None:
    calls: list[Call] = []
    done = await forget_user(state(calls, rag=False), "a/b")
    assert "/internal/users/a%2Fb/documents" not in [p for _, p, _ in calls]
    assert (done["documents"], done["not_deployed"]) == (None, ["documents"])
    assert done["runs_deleted"] == 5
