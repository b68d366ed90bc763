"""`python -m weir_harness`: run the harness until interrupted."""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

from weir_common.bus import KafkaCredentials
from weir_common.engines import ping_postgres, redact
from weir_common.runtime import kafka_check, serve
from weir_harness.app import create_app
from weir_harness.settings import HarnessSettings


def main() -> None:
    """Check the engines, then serve."""
    settings = HarnessSettings()
    serve(
        create_app(settings),
        settings,
        {
            f"Kafka at {settings.kafka_bootstrap_servers}": lambda: kafka_check(
                settings.kafka_bootstrap_servers, KafkaCredentials.of(settings)
            ),
            f"PostgreSQL at {redact(settings.database_url)}": lambda: ping_postgres(
                settings.database_url
            ),
        },
    )


if __name__ == "__main__":
    main()
