"""`/ready`: ready only when the service's engines answer and its consumers hold partitions.

The engine checks are the pre-flight checks `serve()` was given (Kafka, PostgreSQL, Redis,
Milvus… per service), run again, concurrently, at most once per `ttl_s` however often a
probe asks. Every subscriber must hold at least one partition: a consumer that has not
joined its group (or lost its partitions in a rebalance) would leave events waiting. A
group with more members than partitions leaves some members idle and so never ready: run at
most as many replicas of a service as its topics have partitions (`TOPIC_PARTITIONS`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from faststream.kafka import KafkaBroker

Check = Callable[[], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class ReadyReport:
    """What `/ready` answers: `ready`, each engine's state, subscribers without partitions."""

    ready: bool
    engines: dict[str, str]
    unassigned: list[str]
    started: bool

    def body(self) -> dict[str, object]:
        """The JSON body."""
        return {
            "ready": self.ready,
            "started": self.started,
            "engines": self.engines,
            "unassigned": self.unassigned,
        }


def unassigned_subscribers(broker: KafkaBroker) -> list[str]:
    """Subscribers none of whose consumers holds a partition now."""
    missing: list[str] = []
    for sub in broker.subscribers:
        consumers = getattr(sub, "consumer_subgroup", None) or [getattr(sub, "consumer", None)]
        if not any(c is not None and c.assignment() for c in consumers):
            topics = getattr(sub, "topics", None) or [getattr(sub, "call_name", "subscriber")]
            missing.append(",".join(str(t) for t in topics))
    return missing


async def _run(check: Check, timeout_s: float) -> str:
    try:
        await asyncio.wait_for(check(), timeout=timeout_s)
    except Exception as exc:
        return f"down: {str(exc) or type(exc).__name__}"[:300]
    return "ok"


@dataclass
class Readiness:
    """The state behind `/ready`; `checks` are set by `serve()` before the app starts."""

    broker: KafkaBroker
    ttl_s: float = 1.5
    timeout_s: float = 2.0
    checks: Mapping[str, Check] = field(default_factory=dict)
    started: bool = False
    _engines: dict[str, str] = field(default_factory=dict, init=False)
    _checked_at: float = field(default=float("-inf"), init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    async def engines(self) -> dict[str, str]:
        """Each engine's state ("ok" or "down: …"), at most `ttl_s` old."""
        async with self._lock:
            if time.monotonic() - self._checked_at >= self.ttl_s:
                names = list(self.checks)
                states = await asyncio.gather(
                    *(_run(self.checks[n], self.timeout_s) for n in names)
                )
                self._engines = dict(zip(names, states, strict=True))
                self._checked_at = time.monotonic()
            return dict(self._engines)

    async def report(self) -> ReadyReport:
        """Ready when started, every engine answers and every subscriber holds partitions."""
        if not self.started:
            return ReadyReport(False, {}, [], started=False)
        engines = await self.engines()
        unassigned = unassigned_subscribers(self.broker)
        ok = all(state == "ok" for state in engines.values()) and not unassigned
        return ReadyReport(ok, engines, unassigned, started=True)
