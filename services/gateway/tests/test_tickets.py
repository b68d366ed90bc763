"""Ticket stores, one contract: in-process and Redis (the real engine of the stack) issue a
ticket that works once, for its principal, until it expires."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from weir_common.events import new_id
from weir_gateway.auth import Principal
from weir_gateway.tickets import MemoryTickets, RedisTickets, TicketStore


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("redis", marks=pytest.mark.integration),
    ]
)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[TicketStore]:
    """Each implementation in turn."""
    if request.param == "memory":
        tickets: TicketStore = MemoryTickets()
    else:
        env: dict[str, str] = request.getfixturevalue("stack_env")
        tickets = RedisTickets.from_url(env["REDIS_URL"], f"t{new_id()[:6]}.")
    yield tickets
    await tickets.close()


async def test_a_ticket_names_its_principal_once(store: TicketStore) -> None:
    alice, bob = Principal("alice", "admin"), Principal("bob")
    first, second = await store.issue(alice, 30), await store.issue(bob, 30)
    assert first != second
    assert await store.redeem(second) == bob
    assert await store.redeem(first) == alice
    assert await store.redeem(first) is None
    assert await store.redeem("never-issued") is None


async def test_a_ticket_expires(store: TicketStore) -> None:
    ticket = await store.issue(Principal("carol"), 0.05)
    await asyncio.sleep(0.2)
    assert await store.redeem(ticket) is None


async def test_concurrent_redeems_admit_one(store: TicketStore) -> None:
    ticket = await store.issue(Principal("dave"), 30)
    found = await asyncio.gather(*(store.redeem(ticket) for _ in range(8)))
    assert [p for p in found if p is not None] == [Principal("dave")]
