"""Bus helpers on FastStream's KafkaBroker."""

from weir_common.bus.broker import (
    command_subscriber_options,
    ensure_topics,
    key_of,
    make_broker,
    partition_subscriber_options,
    publish,
    reply_subscriber_options,
    subscriber_options,
    wait_until_assigned,
)
from weir_common.bus.credentials import KafkaCredentials, client_options
from weir_common.bus.deadletter import DeadLetters, RetryPolicy
from weir_common.bus.idempotency import Deduper, MemoryDeduper
from weir_common.bus.offset_fetch import install as _install_offset_fetch

_install_offset_fetch()  # committed offsets survive a broker restart (see `offset_fetch`)

__all__ = [
    "DeadLetters",
    "Deduper",
    "KafkaCredentials",
    "MemoryDeduper",
    "RetryPolicy",
    "client_options",
    "command_subscriber_options",
    "ensure_topics",
    "key_of",
    "make_broker",
    "partition_subscriber_options",
    "publish",
    "reply_subscriber_options",
    "subscriber_options",
    "wait_until_assigned",
]
