"""One turn's whole trace lands in a real trace viewer (Arize Phoenix) and reads back whole.

Cheapest correct set-up: the session product already exports every service's spans over
OTLP/HTTP to the test collector; for this test the collector relays each export request's
bytes unchanged to a Phoenix started here (`make traces-env` installs it), so Phoenix sees
exactly what the services' exporters send, without a second product. The trace is read back
through Phoenix's REST API and compared, span by span, with what the services exported.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import websockets

from weir_common.events import new_id
from weir_common.testing.otlp_collector import OTLPCollector
from weir_deploy.base import free_port
from weir_deploy.phoenix import PhoenixEngine, find_phoenix
from weir_deploy.services import Services

from .conftest import ChatClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

#: the services a plain chat turn passes through (rag and tools are not asked)
TURN_SERVICES = {"weir-gateway", "weir-harness", "weir-router", "weir-memory"}


def _turn_trace(collector: OTLPCollector, since: int) -> str | None:
    """The trace id of the newest turn: the one new trace that reached every turn service."""
    services: dict[str, set[str]] = {}
    for span in collector.spans[since:]:
        services.setdefault(span.trace_id, set()).add(span.service)
    full = [t for t, names in services.items() if names >= TURN_SERVICES]
    return full[-1] if full else None


async def _settled_span_ids(collector: OTLPCollector, trace_id: str) -> dict[str, str]:
    """The trace's span ids → service, once no new span has arrived for a second."""
    last, stable_since = -1, time.monotonic()
    while True:
        spans = {s.span_id: s.service for s in collector.spans if s.trace_id == trace_id}
        if len(spans) != last:
            last, stable_since = len(spans), time.monotonic()
        elif time.monotonic() - stable_since > 1.0:
            return spans
        await asyncio.sleep(0.2)


async def _one_turn(product: Services, text: str) -> list[dict[str, Any]]:
    """One turn on a new connection (its spans share the turn's trace, so they must be
    exported after the relay is on)."""
    url = product.url("gateway").replace("http", "ws") + "/ws/chat"
    headers = {"X-User-Id": f"u-{new_id()[:6]}"}
    async with websockets.connect(url, additional_headers=headers) as ws:
        client = ChatClient(ws)
        assert (await client.recv())["type"] == "ready"
        return await client.turn(text)


async def test_a_turn_reads_back_whole_from_phoenix(
    product: Services, collector: OTLPCollector, tmp_path: Path
) -> None:
    assert find_phoenix() is not None, "Phoenix is not installed: run `make traces-env`"
    phoenix = PhoenixEngine(tmp_path, free_port())
    await phoenix.start()
    try:
        collector.forward_to = phoenix.url
        since = len(collector.spans)
        frames = await _one_turn(product, "hello, trace me through the viewer")
        assert frames[-1]["type"] == "done", frames[-1]

        trace_id = None
        for _ in range(100):
            trace_id = _turn_trace(collector, since)
            if trace_id:
                break
            await asyncio.sleep(0.1)
        assert trace_id, collector.services_by_trace()
        exported = await _settled_span_ids(collector, trace_id)

        stored: set[str] = set()
        for _ in range(100):
            found = await asyncio.to_thread(phoenix.spans, trace_id)
            stored = {s["context"]["span_id"] for s in found}
            if stored >= set(exported):
                break
            await asyncio.sleep(0.2)
        missing = {
            s.name: s.service for s in collector.spans if s.span_id in exported.keys() - stored
        }
        assert not missing, f"Phoenix lacks {len(missing)} of {len(exported)} spans: {missing}"
        assert {s["context"]["trace_id"] for s in found} == {trace_id}
        assert set(exported.values()) >= TURN_SERVICES
        # the messaging spans (the ones Phoenix used to reject for their bytes key) are there
        names = [s["name"] for s in found]
        assert any(n.endswith(" publish") for n in names), names
        assert any(n.endswith(" process") for n in names), names
        assert collector.forward_failures == []
        assert phoenix.rejected() == []
    finally:
        collector.forward_to = None
        await phoenix.stop()
