"""The broker's ACLs, made from the ownership map (`weir_common.ownership`), and applied.

`python -m weir_deploy kafka-acls` applies them through the Kafka Admin API (CreateAcls) as
the operator's principal in the environment (`KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT`,
`KAFKA_SASL_USERNAME=admin`, `KAFKA_SASL_PASSWORD`); `--dry-run` prints them. Applying is
idempotent: the broker keeps one copy of a binding created twice.

Each service's principal `User:<service>` gets:

- DESCRIBE and CREATE on every topic under the prefix (services create the catalogue's
  topics at start-up, whichever comes first);
- WRITE on the topics of the event types it produces, and on the dead-letter topics of
  those it consumes;
- READ on the topics it consumes and on its own consumer groups (`weir.<service>.*`);
- WRITE on every reply topic if it answers requests, READ and WRITE on its own reply
  topics if it is a requester.

SCRAM users are made when the broker's storage is formatted (`scram_format_args`) or
with Kafka's `kafka-configs.sh --alter --add-config SCRAM-SHA-512=[password=...]`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from weir_common.bus import KafkaCredentials, client_options
from weir_common.ownership import OWNERSHIP, Ownership
from weir_common.topics import DLQ_SUFFIX

ResourceType = Literal["TOPIC", "GROUP"]
PatternType = Literal["LITERAL", "PREFIXED"]
Operation = Literal["READ", "WRITE", "CREATE", "DESCRIBE"]

# Kafka's wire codes (org.apache.kafka.common.resource / acl)
RESOURCE_CODES = {"TOPIC": 2, "GROUP": 3}
PATTERN_CODES = {"LITERAL": 3, "PREFIXED": 4}
OPERATION_CODES = {"READ": 3, "WRITE": 4, "CREATE": 5, "DESCRIBE": 8}
ALLOW = 3
ANY_HOST = "*"
#: consumer groups are named `weir.<service>...` whatever the topic prefix
GROUP_ROOT = "weir."


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ALLOW rule: `principal` may do `operation` on the resources the pattern names."""

    principal: str
    resource: ResourceType
    name: str
    pattern: PatternType
    operation: Operation

    def matches(self, resource: ResourceType, name: str) -> bool:
        """True when this rule's resource pattern covers `name`."""
        if resource != self.resource:
            return False
        return name == self.name if self.pattern == "LITERAL" else name.startswith(self.name)

    def __str__(self) -> str:
        return f"{self.principal} {self.operation} {self.resource} {self.pattern} {self.name}"


def principal(service: str) -> str:
    """The Kafka principal of a service's SCRAM user."""
    return f"User:{service}"


def _service_bindings(entry: Ownership, prefix: str) -> Iterator[AclBinding]:
    user = principal(entry.service)

    def topic(name: str, pattern: PatternType, operation: Operation) -> AclBinding:
        return AclBinding(user, "TOPIC", name, pattern, operation)

    yield topic(prefix, "PREFIXED", "DESCRIBE")
    yield topic(prefix, "PREFIXED", "CREATE")
    for event_type in entry.produces:
        yield topic(prefix + event_type, "LITERAL", "WRITE")
    for event_type in entry.consumes:
        yield topic(prefix + event_type, "LITERAL", "READ")
        yield topic(prefix + event_type + DLQ_SUFFIX, "LITERAL", "WRITE")
    if entry.writes_replies:
        yield topic(f"{prefix}replies.", "PREFIXED", "WRITE")
    if entry.reads_replies is not None:
        own = f"{prefix}replies.{entry.reads_replies}"
        yield topic(own, "PREFIXED", "READ")
        yield topic(own, "PREFIXED", "WRITE")  # the dead-letter topic of its reply topic
    for group in entry.groups:
        for root in dict.fromkeys((GROUP_ROOT, prefix)):
            yield AclBinding(user, "GROUP", root + group, "PREFIXED", "READ")


def acl_bindings(
    prefix: str = "weir.", ownership: Iterable[Ownership] = OWNERSHIP
) -> list[AclBinding]:
    """Every ACL the ownership map asks for, for topics under `prefix` (sorted, no repeats)."""
    return sorted({b for entry in ownership for b in _service_bindings(entry, prefix)})


def allowed(
    bindings: Iterable[AclBinding],
    user: str,
    operation: Operation,
    name: str,
    resource: ResourceType = "TOPIC",
) -> bool:
    """True when `bindings` let `user` (a service name) do `operation` on `name`, as
    Kafka's StandardAuthorizer decides (READ and WRITE imply DESCRIBE)."""
    implied = {operation, "READ", "WRITE"} if operation == "DESCRIBE" else {operation}
    return any(
        b.principal == principal(user) and b.operation in implied and b.matches(resource, name)
        for b in bindings
    )


async def apply_acls(
    bootstrap: str, credentials: KafkaCredentials | None, bindings: Iterable[AclBinding]
) -> int:
    """Create `bindings` on the broker (as a principal allowed to: a super user); returns
    how many were sent. Raises on the first the broker refuses."""
    from aiokafka.admin import AIOKafkaAdminClient  # noqa: PLC0415
    from aiokafka.protocol.admin import CreateAclsRequest  # noqa: PLC0415

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="weir-acls", **client_options(credentials)
    )
    await admin.start()
    sent = 0
    try:
        for binding in bindings:
            request = CreateAclsRequest(
                RESOURCE_CODES[binding.resource],
                binding.name,
                PATTERN_CODES[binding.pattern],
                binding.principal,
                ANY_HOST,
                OPERATION_CODES[binding.operation],
                ALLOW,
            )
            # aiokafka has no public CreateAcls: its own request class, sent as the admin
            response = await admin._send_request(request)
            for error_code, message in response.creation_responses:
                if error_code:
                    raise RuntimeError(f"broker refused ACL {binding}: {error_code} {message}")
            sent += 1
    finally:
        await admin.close()
    return sent


def scram_format_args(users: Mapping[str, str], mechanism: str = "SCRAM-SHA-512") -> list[str]:
    """`kafka-storage format` arguments that create SCRAM users with the storage.

    Passwords must not hold `,`, `]` or `"` (the tool's own syntax); URL-safe random tokens
    (`secrets.token_urlsafe`) are fine.
    """
    args: list[str] = []
    for name, password in users.items():
        if any(c in password for c in ',]"') or any(c in name for c in ',]="'):
            raise ValueError(f"SCRAM user {name!r}: use a URL-safe password")
        args += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
    return args
