"""FastStream's Kafka telemetry middleware with OTel-valid attributes.

FastStream sets `messaging.kafka.message.key` to the record key as `bytes` on publish and on
consume spans. bytes is not an OTel attribute type: the OTLP exporter sends it as
`bytes_value` and trace viewers (Arize Phoenix) reject the whole span, so every messaging
span of a turn disappeared. These providers hand FastStream the same attributes with every
value coerced by `otel_value` (our keys are UTF-8 ids, so the key reads as text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from faststream.kafka.opentelemetry.provider import (
    BatchKafkaTelemetrySettingsProvider,
    KafkaTelemetrySettingsProvider,
)
from faststream.kafka.response import KafkaPublishCommand
from faststream.opentelemetry.middleware import TelemetryMiddleware
from opentelemetry.trace import TracerProvider

from weir_common.telemetry import otel_attributes

if TYPE_CHECKING:
    from aiokafka import ConsumerRecord
    from faststream.message import StreamMessage


class ValidKafkaTelemetrySettingsProvider(KafkaTelemetrySettingsProvider):
    """Attributes of single-record spans, every value a valid OTel type."""

    __slots__ = ()

    def get_publish_attrs_from_cmd(self, cmd: KafkaPublishCommand) -> dict[str, Any]:
        """Publish-span attributes (the key as text)."""
        return otel_attributes(super().get_publish_attrs_from_cmd(cmd))

    def get_consume_attrs_from_message(self, msg: StreamMessage[ConsumerRecord]) -> dict[str, Any]:
        """Consume-span attributes (the key as text)."""
        return otel_attributes(super().get_consume_attrs_from_message(msg))


class ValidBatchKafkaTelemetrySettingsProvider(BatchKafkaTelemetrySettingsProvider):
    """Attributes of batch spans, every value a valid OTel type."""

    __slots__ = ()

    def get_publish_attrs_from_cmd(self, cmd: KafkaPublishCommand) -> dict[str, Any]:
        """Publish-span attributes (the key as text)."""
        return otel_attributes(super().get_publish_attrs_from_cmd(cmd))

    def get_consume_attrs_from_message(
        self, msg: StreamMessage[tuple[ConsumerRecord, ...]]
    ) -> dict[str, Any]:
        """Consume-span attributes."""
        return otel_attributes(super().get_consume_attrs_from_message(msg))


def _provider_factory(
    msg: ConsumerRecord | Sequence[ConsumerRecord] | None,
) -> ValidKafkaTelemetrySettingsProvider | ValidBatchKafkaTelemetrySettingsProvider:
    if isinstance(msg, Sequence):
        return ValidBatchKafkaTelemetrySettingsProvider()
    return ValidKafkaTelemetrySettingsProvider()


class ValidKafkaTelemetryMiddleware(TelemetryMiddleware[KafkaPublishCommand]):
    """`KafkaTelemetryMiddleware` whose span attributes are all valid OTel values."""

    def __init__(self, *, tracer_provider: TracerProvider | None = None) -> None:
        super().__init__(
            settings_provider_factory=_provider_factory,
            tracer_provider=tracer_provider,
            include_messages_counters=False,
        )
