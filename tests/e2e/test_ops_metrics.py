"""Prometheus metrics of the running product after a real turn (and one poison event),
scraped from each service's `/metrics` with the service credential."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from weir_deploy.services import Services

from .conftest import ChatClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _scrape(product: Services, service: str) -> Samples:
    async with httpx.AsyncClient(base_url=product.url(service)) as http:
        assert (await http.get("/metrics")).status_code == 401  # ops data needs the credential
        answer = await http.get("/metrics", headers=product.headers())
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _named(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


async def test_a_turn_shows_in_every_services_metrics(
    chat: ChatClient, product: Services, stack_env: dict[str, str], topic_prefix: str
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack_env["KAFKA_BOOTSTRAP_SERVERS"])
    await producer.start()
    try:
        await producer.send_and_wait(f"{topic_prefix}chat.requested", b"\x00 not an event")
    finally:
        await producer.stop()
    frames = await chat.turn("hello, count me")
    assert frames[-1]["type"] == "done"

    harness = await _scrape(product, "harness")
    for _ in range(50):  # memory records the turn after `done`; the run closes then
        if _value(harness, "weir_runs_total", outcome="completed") >= 1:
            break
        await asyncio.sleep(0.2)
        harness = await _scrape(product, "harness")
    assert _value(harness, "weir_runs_total", outcome="completed") >= 1
    answer = {"step": "answer.generate.requested", "outcome": "ok"}
    count = _value(harness, "weir_step_duration_seconds_count", **answer)
    total = _value(harness, "weir_step_duration_seconds_sum", **answer)
    assert count >= 1
    assert 0 < total / count < 30
    parked = _value(
        harness,
        "weir_dead_letters_total",
        topic=f"{topic_prefix}chat.requested",
        reason="invalid_event",
    )
    assert parked >= 1

    for service in ("harness", "router", "memory", "gateway"):
        lag = _named(await _scrape(product, service), "weir_consumer_lag")
        for _ in range(20):  # a partition's first fetch (its highwater) may still be on its way
            if lag:
                break
            await asyncio.sleep(0.5)
            lag = _named(await _scrape(product, service), "weir_consumer_lag")
        assert lag, f"{service} reports no consumer lag"
        assert all(v >= 0 for v in lag.values())
        assert all(dict(labels)["topic"].startswith(topic_prefix) for labels in lag)

    router = await _scrape(product, "router")
    for kind in ("input", "output"):
        assert _value(router, "weir_llm_tokens_total", model="openai/scripted", kind=kind) > 0
    assert _value(router, "weir_llm_calls_total", model="openai/scripted",
                  operation="chat", outcome="ok") >= 1  # fmt: skip

    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        assert (await http.get("/health")).status_code == 200
    gateway = await _scrape(product, "gateway")
    assert _value(gateway, "weir_ws_connections_opened_total") >= 1
    assert _value(gateway, "weir_ws_connections") >= 1  # this test's client is still open
    health = {"method": "GET", "route": "/health", "status": "200"}
    assert _value(gateway, "weir_http_requests_total", **health) >= 1


async def test_every_service_of_the_running_product_is_ready(product: Services) -> None:
    for service in product.names:
        async with httpx.AsyncClient(base_url=product.url(service)) as http:
            answer = await http.get("/ready")
        body = answer.json()
        assert answer.status_code == 200, (service, body)
        assert body["ready"] is True
        assert body["engines"], f"{service} checks no engine"
        assert set(body["engines"].values()) == {"ok"}, (service, body)
        assert body["unassigned"] == []
