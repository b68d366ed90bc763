"""Disruptions during a load: SIGKILL a random service (its supervisor restarts it), stop and
start an engine on its data. Each is recorded in the ledger with the runs it caught in flight."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import Sequence

import structlog

from weir_deploy.services import Services
from weir_deploy.stack import Stack

from .driver import Chaos, Disruption, Ledger, pick_victims

log = structlog.get_logger(__name__)
RESTART_TIMEOUT_S = 60.0


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds`; True when `stop` was set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def _back_up(services: Services, name: str, old_pid: int) -> None:
    """Wait until the supervisor has started a new `name` and it answers /health."""
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    while services.pid(name) in (None, old_pid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} was not restarted within {RESTART_TIMEOUT_S} s")
        await asyncio.sleep(0.05)
    await services.wait_healthy(name, max(1.0, deadline - time.monotonic()))


def killer(
    services: Services,
    names: Sequence[str],
    *,
    every_s: tuple[float, float] = (4.0, 8.0),
    first: Sequence[str] = ("gateway", "harness"),
    seed: int = 10,
    kills: int | None = None,
) -> Chaos:
    """SIGKILL a random service every `every_s` seconds until the load has been sent, or
    until `kills` were made (then no more messages are sent): the `first` ones first, then
    every name once before any repeats; a service still coming back is not chosen."""
    rng = random.Random(seed)
    choose = pick_victims(rng, names, first)

    async def run(ledger: Ledger, stop: asyncio.Event) -> None:
        returns: dict[str, asyncio.Task[None]] = {}
        while not await _sleep_or_stop(stop, rng.uniform(*every_s)):
            name = choose(lambda n: n not in returns or returns[n].done())
            pid = services.pid(name) if name else None
            if pid is None:
                continue
            event = ledger.disrupt(name)
            os.kill(pid, signal.SIGKILL)
            returns[name] = asyncio.create_task(_record_return(services, event, pid))
            if kills is not None and len(ledger.disruptions) >= kills:
                ledger.enough = True
                break
        await asyncio.gather(*returns.values())

    return run


async def _record_return(services: Services, event: Disruption, old_pid: int) -> None:
    """Wait for the killed service to be back; record when, or why it was not."""
    try:
        await _back_up(services, event.victim, old_pid)
        event.back_at = time.monotonic()
    except Exception as exc:
        event.failed = f"{type(exc).__name__}: {exc}"
        log.warning("chaos.restart_failed", victim=event.victim, error=event.failed)


def one_at_a_time(
    services: Services,
    names: Sequence[str],
    *,
    rounds: int = 3,
    settle_timeout_s: float = 120.0,
    seed: int = 11,
) -> Chaos:
    """SIGKILL each service in turn, `rounds` times, each at a random moment of a run in
    flight and only once the previous victim has recovered (back up, and every run it caught
    answered), so each recovery time is its own and not the sum of overlapping kills. Ends the
    load when done."""
    rng = random.Random(seed)

    async def run(ledger: Ledger, stop: asyncio.Event) -> None:
        order = [name for _ in range(rounds) for name in rng.sample(list(names), len(names))]
        for name in order:
            while not any(ledger.messages[mid].run_id for mid in ledger.open_mids()):
                if await _sleep_or_stop(stop, 0.1):
                    return
            await asyncio.sleep(rng.uniform(0.0, 1.0))
            pid = services.pid(name)
            if pid is None:
                continue
            event = ledger.disrupt(name)
            os.kill(pid, signal.SIGKILL)
            await _record_return(services, event, pid)
            await _caught_answered(ledger, event, settle_timeout_s)
        ledger.enough = True

    return run


async def _caught_answered(ledger: Ledger, event: Disruption, timeout_s: float) -> None:
    """Wait until every run in flight at `event` has its answer (or `timeout_s` passed)."""
    deadline = time.monotonic() + timeout_s
    caught = [ledger.messages[mid] for mid in event.inflight]
    while any(m.open for m in caught):
        if time.monotonic() > deadline:
            log.warning("chaos.unrecovered", victim=event.victim, timeout_s=timeout_s)
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # the next kill lands on a settled system


def engine_outage(stack: Stack, name: str, *, after_s: float = 3.0, down_s: float = 3.0) -> Chaos:
    """Stop engine `name` `after_s` into the load, start it again `down_s` later."""

    async def run(ledger: Ledger, stop: asyncio.Event) -> None:
        await _sleep_or_stop(stop, after_s)
        engine = stack.engine(name)
        event = ledger.disrupt(name)
        try:
            await engine.stop()
            await asyncio.sleep(down_s)
            await engine.start()
            event.back_at = time.monotonic()
        except Exception as exc:
            event.failed = f"{type(exc).__name__}: {exc}"
            log.warning("chaos.engine_restart_failed", engine=name, error=event.failed)

    return run
