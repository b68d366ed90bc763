"""The broker of a deployment: SASL/SCRAM principals and ACLs made from the ownership map.

A private Apache Kafka in the launcher's SASL mode (SCRAM-SHA-512 on a SASL_PLAINTEXT
listener, StandardAuthorizer, `admin` the only super user of the client listener) with a
user per service and the ACLs of `weir_deploy.kafka_acls` applied: a service produces its
own topics and nothing else, and an unknown or unauthenticated client gets nothing.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
)
from opentelemetry.sdk.trace import TracerProvider
from pydantic import SecretStr

from weir_common.bus import (
    KafkaCredentials,
    ensure_topics,
    make_broker,
    publish,
    subscriber_options,
)
from weir_common.events import Intent, Route, RouteDecided, RouteRequested, new_id
from weir_common.topics import Topics
from weir_deploy.base import free_port
from weir_deploy.kafka import ADMIN, ApacheKafka
from weir_deploy.kafka_acls import acl_bindings, apply_acls

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

USERS = (ADMIN, "gateway", "router")
PREFIX = "weir."
TOPICS = Topics(prefix=PREFIX)


@pytest.fixture(scope="module")
async def sasl_kafka(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ApacheKafka]:
    """A private SASL broker with the users of USERS, the catalogue's topics and the ACLs."""
    users = {name: secrets.token_urlsafe(16) for name in USERS}
    engine = ApacheKafka(tmp_path_factory.mktemp("sasl"), free_port(), sasl_users=users)
    await engine.start()
    try:
        admin = engine.credentials(ADMIN)
        names = [*TOPICS.all_fixed(), TOPICS.reply("gateway.local")]
        await ensure_topics(engine.bootstrap, names, 1, credentials=admin)
        await apply_acls(engine.bootstrap, admin, acl_bindings(PREFIX))
        yield engine
    finally:
        await engine.stop()


async def _produce(bootstrap: str, topic: str, options: dict[str, Any]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, **options)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b'{"probe": true}')
    finally:
        await producer.stop()


async def _produce_as(engine: ApacheKafka, user: str, topic: str) -> None:
    await _produce(engine.bootstrap, topic, engine.credentials(user).aiokafka())


async def test_a_service_produces_its_own_topics(sasl_kafka: ApacheKafka) -> None:
    await _produce_as(sasl_kafka, "router", TOPICS.of("route.decided"))
    await _produce_as(sasl_kafka, "router", TOPICS.reply("gateway.local"))  # answer.delta
    await _produce_as(sasl_kafka, "gateway", TOPICS.of("chat.requested"))


async def test_only_the_gateway_may_request_a_chat(sasl_kafka: ApacheKafka) -> None:
    with pytest.raises(TopicAuthorizationFailedError):
        await _produce_as(sasl_kafka, "router", TOPICS.of("chat.requested"))


async def test_a_wrong_password_is_refused(sasl_kafka: ApacheKafka) -> None:
    wrong = KafkaCredentials(
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "gateway", SecretStr("not-the-password")
    )
    with pytest.raises(KafkaError):
        async with asyncio.timeout(60):
            await _produce(sasl_kafka.bootstrap, TOPICS.of("chat.requested"), wrong.aiokafka())


async def test_a_client_without_sasl_is_refused(sasl_kafka: ApacheKafka) -> None:
    with pytest.raises((KafkaError, asyncio.TimeoutError)):
        async with asyncio.timeout(30):
            await _produce(sasl_kafka.bootstrap, TOPICS.of("chat.requested"), {})


async def test_a_service_broker_publishes_and_consumes_with_its_principal(
    sasl_kafka: ApacheKafka,
) -> None:
    credentials = sasl_kafka.credentials("router")
    broker = make_broker(sasl_kafka.bootstrap, "router", TracerProvider(), credentials=credentials)
    got: asyncio.Queue[RouteDecided] = asyncio.Queue()
    run_id = new_id()

    async def on_route(event: RouteRequested) -> None:
        decided = RouteDecided(
            run_id=event.run_id,
            request_id=event.event_id,
            intent=Intent.CHAT,
            route=Route.PLAIN_CHAT,
        )
        await publish(broker, TOPICS, decided)

    options = subscriber_options("weir.router.route")
    broker.subscriber(TOPICS.of("route.requested"), **options)(on_route)
    # the harness's side, played by the operator's principal
    admin_credentials = sasl_kafka.credentials(ADMIN)
    admin = make_broker(
        sasl_kafka.bootstrap, "admin", TracerProvider(), credentials=admin_credentials
    )

    async def on_decided(body: dict[str, Any]) -> None:
        if body.get("type") == "route.decided":  # not the probes of the tests above
            await got.put(RouteDecided.model_validate(body))

    admin.subscriber(TOPICS.of("route.decided"), **subscriber_options(f"weir.test.{run_id}"))(
        on_decided
    )
    async with broker, admin:
        await broker.start()
        await admin.start()
        await publish(admin, TOPICS, RouteRequested(query="hi", run_id=run_id))
        async with asyncio.timeout(60):
            while (event := await got.get()).run_id != run_id:
                pass
    assert event.intent is Intent.CHAT


async def _join(engine: ApacheKafka, user: str, topic: str, group: str) -> None:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=engine.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        **engine.credentials(user).aiokafka(),
    )
    await consumer.start()
    try:
        async with asyncio.timeout(60):
            await consumer.getmany(timeout_ms=5000)
    finally:
        await consumer.stop()


async def test_a_service_joins_only_its_own_groups(sasl_kafka: ApacheKafka) -> None:
    replies = TOPICS.reply("gateway.local")
    await _join(sasl_kafka, "gateway", replies, "weir.gateway.local")
    with pytest.raises(GroupAuthorizationFailedError):
        await _join(sasl_kafka, "gateway", replies, "weir.harness.requests")


async def test_a_service_reads_only_what_it_consumes(sasl_kafka: ApacheKafka) -> None:
    with pytest.raises(TopicAuthorizationFailedError):
        await _join(sasl_kafka, "router", TOPICS.of("chat.requested"), "weir.router.route")


def test_the_broker_config_holds_only_the_admin_login(tmp_path: Path) -> None:
    """The server config holds the admin's inter-broker login, not the services' passwords."""
    engine = ApacheKafka(tmp_path, free_port(), sasl_users={ADMIN: "a", "gateway": "g-secret"})
    text = engine._properties()
    assert "g-secret" not in text
    assert "StandardAuthorizer" in text
    assert "SASL_PLAINTEXT://127.0.0.1" in text
    assert "CONTROLLER://127.0.0.1" in text
    assert ApacheKafka(tmp_path, free_port()).admin is None  # the default stays plain


async def test_a_service_creates_its_topics_at_start_up(sasl_kafka: ApacheKafka) -> None:
    """What `service_app` does first: the catalogue (there already) and its reply topic."""
    reply = TOPICS.reply(f"gateway.{new_id()[:8]}")
    credentials = sasl_kafka.credentials("gateway")
    names = [*TOPICS.all_fixed(), reply, Topics.dead_letter(reply)]
    await ensure_topics(sasl_kafka.bootstrap, names, 1, credentials=credentials)
    await _produce_as(sasl_kafka, "gateway", Topics.dead_letter(reply))
    await _join(sasl_kafka, "gateway", reply, "weir.gateway.pod")
