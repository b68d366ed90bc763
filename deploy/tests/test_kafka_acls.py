"""The ownership map and the ACLs made from it agree with the code and the event contract."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from faststream.security import SASLScram256, SASLScram512
from pydantic import SecretStr

from weir_common.bus import KafkaCredentials, make_broker
from weir_common.ownership import OWNERSHIP, SERVICE_PRINCIPALS
from weir_common.settings import WeirSettings
from weir_common.topics import COMMAND_TYPES, FACT_TYPES, HARNESS_RESULT_TYPES, Topics
from weir_deploy.kafka_acls import AclBinding, acl_bindings, allowed, scram_format_args
from weir_deploy.services import DEFAULT_SERVICES

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ASYNCAPI = ROOT / "docs" / "asyncapi.json"
PREFIX = "weir."
BINDINGS = acl_bindings(PREFIX)
TOPICS = Topics(prefix=PREFIX)


def writers(topic: str) -> set[str]:
    return {o.service for o in OWNERSHIP if allowed(BINDINGS, o.service, "WRITE", topic)}


def readers(topic: str) -> set[str]:
    return {o.service for o in OWNERSHIP if allowed(BINDINGS, o.service, "READ", topic)}


def test_the_map_names_every_service() -> None:
    assert set(SERVICE_PRINCIPALS) == set(DEFAULT_SERVICES)
    assert len({o.service for o in OWNERSHIP}) == len(OWNERSHIP)


def test_every_operation_of_the_contract_is_allowed_to_its_principal() -> None:
    """Each `<principal>.send.<channel>` may write the channel's topic, each `receive` read
    it (a `{parameter}` of an address filled with its first example). Parking in the
    dead-letter topics is checked per subscriber below."""
    document = json.loads(ASYNCAPI.read_text())
    assert document["operations"]
    for name, operation in document["operations"].items():
        channel = document["channels"][operation["channel"]["$ref"].rsplit("/", 1)[1]]
        address = channel["address"]
        if address.endswith(".dlq"):
            continue
        for parameter, spec in channel.get("parameters", {}).items():
            address = address.replace(f"{{{parameter}}}", spec["examples"][0])
        service, action = name.split(".")[:2]
        allowed_to = writers(address) if action == "send" else readers(address)
        assert service in allowed_to, f"{name}: {service} may not {action} {address}"
    every_channel = {o["channel"]["$ref"] for o in document["operations"].values()}
    assert len(every_channel) == len(document["channels"])


def test_every_catalogue_topic_has_an_owner() -> None:
    for event_type in (*COMMAND_TYPES, *HARNESS_RESULT_TYPES, *FACT_TYPES):
        assert writers(TOPICS.of(event_type)), event_type


def test_only_the_gateway_and_the_batch_job_request_chats_and_ingests() -> None:
    assert writers(TOPICS.of("chat.requested")) == {"gateway"}
    assert writers(TOPICS.of("ingest.requested")) == {"gateway", "batch"}
    assert readers(TOPICS.of("chat.requested")) == {"harness"}


def test_step_commands_come_only_from_the_harness_and_results_only_from_workers() -> None:
    for event_type in COMMAND_TYPES:
        if event_type not in {"chat.requested", "ingest.requested", "tool.confirmation.given"}:
            assert writers(TOPICS.of(event_type)) == {"harness"}, event_type
    # the user's answer for a tool call waiting for approval comes only from the gateway
    assert writers(TOPICS.of("tool.confirmation.given")) == {"gateway"}
    for event_type in HARNESS_RESULT_TYPES:
        assert "harness" not in writers(TOPICS.of(event_type)), event_type
        assert "gateway" not in writers(TOPICS.of(event_type)), event_type
    assert writers(TOPICS.of("tools.catalog.updated")) == {"tools"}


def test_replies_are_read_only_by_their_requester() -> None:
    gateway_replies = TOPICS.reply("gateway.pod-1")
    assert readers(gateway_replies) == {"gateway"}
    # memory sends `conversation.titled` to the requester (issue 12)
    assert writers(gateway_replies) == {"gateway", "harness", "router", "rag", "memory"}
    assert readers(TOPICS.reply("batch.job.1")) == {"batch"}


def test_bindings_follow_the_topic_prefix() -> None:
    other = acl_bindings("staging.")
    assert allowed(other, "gateway", "WRITE", "staging.chat.requested")
    assert not allowed(other, "gateway", "WRITE", "weir.chat.requested")
    # group ids carry `weir.` (most services) or the topic prefix (memory)
    assert allowed(other, "memory", "READ", "staging.memory.context", "GROUP")
    assert allowed(other, "harness", "READ", "weir.harness.requests", "GROUP")


def test_every_principal_may_describe_and_create_the_catalogue() -> None:
    for service in SERVICE_PRINCIPALS:
        for topic in TOPICS.all_fixed():
            assert allowed(BINDINGS, service, "DESCRIBE", topic), (service, topic)
            assert allowed(BINDINGS, service, "CREATE", topic), (service, topic)


def test_bindings_are_literal_or_prefixed_and_never_wildcards() -> None:
    for binding in BINDINGS:
        assert binding.name, binding
        assert binding.name != "*", binding
        assert binding.principal.startswith("User:"), binding
        assert binding.pattern in {"LITERAL", "PREFIXED"}
    assert AclBinding("User:x", "TOPIC", "a.", "PREFIXED", "READ").matches("TOPIC", "a.b")
    assert not AclBinding("User:x", "TOPIC", "a.", "LITERAL", "READ").matches("TOPIC", "a.b")


# --- the subscribers of each service, as the code registers them --------------------------


def _apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    """Each service's app built with default settings (nothing is started)."""
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WEIR_CONFIG", str(tmp_path / "no-weir.toml"))
    from weir_gateway.app import create_app as gateway  # noqa: PLC0415
    from weir_gateway.settings import GatewaySettings  # noqa: PLC0415
    from weir_harness.app import create_app as harness  # noqa: PLC0415
    from weir_harness.settings import HarnessSettings  # noqa: PLC0415
    from weir_memory.app import create_app as memory  # noqa: PLC0415
    from weir_memory.settings import MemorySettings  # noqa: PLC0415
    from weir_rag.app import create_app as rag  # noqa: PLC0415
    from weir_rag.settings import RagSettings  # noqa: PLC0415
    from weir_router.app import create_app as router  # noqa: PLC0415
    from weir_router.settings import RouterSettings  # noqa: PLC0415
    from weir_tools.app import create_app as tools  # noqa: PLC0415
    from weir_tools.settings import ToolsSettings  # noqa: PLC0415

    factories: dict[str, tuple[Callable[[Any], Any], type[WeirSettings]]] = {
        "gateway": (gateway, GatewaySettings),
        "harness": (harness, HarnessSettings),
        "router": (router, RouterSettings),
        "memory": (memory, MemorySettings),
        "rag": (rag, RagSettings),
        "tools": (tools, ToolsSettings),
    }
    for name, (create, settings) in factories.items():
        yield name, create(settings())


def test_each_service_may_read_what_it_subscribes_and_park_its_poison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for service, app in _apps(tmp_path, monkeypatch):
        subscribers = app.state.broker.subscribers
        assert subscribers, service
        for sub in subscribers:
            for topic in sub.topic_names:
                assert allowed(BINDINGS, service, "READ", topic), (service, topic)
                assert allowed(BINDINGS, service, "WRITE", Topics.dead_letter(topic)), topic
            assert allowed(BINDINGS, service, "READ", sub.group_id, "GROUP"), sub.group_id
            assert not allowed(BINDINGS, "gateway" if service != "gateway" else "router",
                               "READ", sub.group_id, "GROUP")  # fmt: skip


# --- client credentials -----------------------------------------------------------------


def test_plaintext_needs_nothing() -> None:
    plain = KafkaCredentials()
    assert plain.faststream() is None
    assert plain.aiokafka() == {}


def test_scram_credentials_for_faststream_and_aiokafka() -> None:
    creds = KafkaCredentials("SASL_PLAINTEXT", "SCRAM-SHA-512", "router", SecretStr("pw"))
    security = creds.faststream()
    assert isinstance(security, SASLScram512)
    assert (security.username, security.password, security.use_ssl) == ("router", "pw", False)
    assert creds.aiokafka() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "router",
        "sasl_plain_password": "pw",
    }
    tls = KafkaCredentials("SASL_SSL", "SCRAM-SHA-256", "router", SecretStr("pw"))
    assert isinstance(tls.faststream(), SASLScram256)
    assert tls.aiokafka()["ssl_context"] is not None


def test_sasl_without_a_principal_is_refused() -> None:
    with pytest.raises(ValueError, match="KAFKA_SASL_USERNAME"):
        KafkaCredentials("SASL_PLAINTEXT", "SCRAM-SHA-512", "router")


def test_credentials_come_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEIR_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "tools")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "s3cret")
    creds = KafkaCredentials.from_env()
    assert (creds.username, creds.password.get_secret_value()) == ("tools", "s3cret")
    assert "s3cret" not in repr(WeirSettings())
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SSL_PLEASE")
    with pytest.raises(ValueError, match="kafka_security_protocol"):
        WeirSettings()


def test_make_broker_passes_the_security_object() -> None:
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415

    creds = KafkaCredentials("SASL_PLAINTEXT", "SCRAM-SHA-512", "router", SecretStr("pw"))
    broker = make_broker("127.0.0.1:1", "router", TracerProvider(), credentials=creds)
    assert isinstance(broker.specification.security, SASLScram512)


def test_scram_users_at_format_time() -> None:
    args = scram_format_args({"admin": "a-b_C", "gateway": "xyz"})
    assert args == [
        "--add-scram", "SCRAM-SHA-512=[name=admin,password=a-b_C]",
        "--add-scram", "SCRAM-SHA-512=[name=gateway,password=xyz]",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="URL-safe"):
        scram_format_args({"gateway": "has,comma"})
