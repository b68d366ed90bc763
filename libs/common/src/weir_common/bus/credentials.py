"""How a client proves who it is to the broker: one principal per service (SASL/SCRAM).

Every Kafka client weir creates (the FastStream broker of a service, the admin client that
creates topics, the gateway's reply read-back, the dead-letter tool) gets its credentials
from here, so none of them can be left talking plaintext to a broker that wants SASL.
The local launcher's broker is plain on loopback: `PLAINTEXT` needs nothing.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faststream.security import BaseSecurity, SASLScram256, SASLScram512
from pydantic import SecretStr

if TYPE_CHECKING:
    from weir_common.settings import WeirSettings

PLAINTEXT = "PLAINTEXT"
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
NO_PASSWORD = SecretStr("")


@dataclass(frozen=True, slots=True)
class KafkaCredentials:
    """The security protocol and, with SASL, the SCRAM principal of one client."""

    protocol: str = PLAINTEXT
    mechanism: str = "SCRAM-SHA-512"
    username: str = ""
    password: SecretStr = NO_PASSWORD

    def __post_init__(self) -> None:
        if self.protocol != PLAINTEXT and self.protocol not in SASL_PROTOCOLS:
            raise ValueError(f"unsupported Kafka security protocol {self.protocol!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unsupported SASL mechanism {self.mechanism!r}")
        if self.sasl and not (self.username and self.password.get_secret_value()):
            raise ValueError(f"{self.protocol} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD")

    @classmethod
    def of(cls, settings: WeirSettings) -> KafkaCredentials:
        """The credentials a service's settings name."""
        return cls(
            protocol=settings.kafka_security_protocol,
            mechanism=settings.kafka_sasl_mechanism,
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password,
        )

    @classmethod
    def from_env(cls) -> KafkaCredentials:
        """The credentials in the environment (`KAFKA_SECURITY_PROTOCOL`...), for tools."""
        from weir_common.settings import WeirSettings  # noqa: PLC0415

        return cls.of(WeirSettings())

    @property
    def sasl(self) -> bool:
        """True when the client authenticates with SASL."""
        return self.protocol in SASL_PROTOCOLS

    def faststream(self) -> BaseSecurity | None:
        """The security object `KafkaBroker(security=...)` takes (None: plaintext)."""
        if not self.sasl:
            return None
        kind = SASLScram512 if self.mechanism == "SCRAM-SHA-512" else SASLScram256
        context = ssl.create_default_context() if self.protocol == "SASL_SSL" else None
        return kind(self.username, self.password.get_secret_value(), ssl_context=context)

    def aiokafka(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's clients (consumer, producer, admin)."""
        if not self.sasl:
            return {}
        options: dict[str, Any] = {
            "security_protocol": self.protocol,
            "sasl_mechanism": self.mechanism,
            "sasl_plain_username": self.username,
            "sasl_plain_password": self.password.get_secret_value(),
        }
        if self.protocol == "SASL_SSL":
            options["ssl_context"] = ssl.create_default_context()
        return options


def client_options(credentials: KafkaCredentials | None) -> dict[str, Any]:
    """aiokafka keyword arguments for `credentials` (None: plaintext)."""
    return credentials.aiokafka() if credentials is not None else {}
