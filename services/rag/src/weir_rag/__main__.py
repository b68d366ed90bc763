"""`python -m weir_rag`: run the knowledge service until interrupted."""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

from weir_common.bus import KafkaCredentials
from weir_common.engines import ping_milvus, ping_postgres, redact
from weir_common.runtime import kafka_check, serve
from weir_rag.app import create_app
from weir_rag.settings import RagSettings


def main() -> None:
    """Check the engines, then serve."""
    settings = RagSettings()
    bootstrap = settings.kafka_bootstrap_servers
    credentials = KafkaCredentials.of(settings)
    serve(
        create_app(settings),
        settings,
        {
            f"Kafka at {bootstrap}": lambda: kafka_check(bootstrap, credentials),
            f"PostgreSQL at {redact(settings.database_url)}": lambda: ping_postgres(
                settings.database_url
            ),
            f"Milvus at {settings.milvus_uri}": lambda: ping_milvus(settings.milvus_uri),
        },
    )


if __name__ == "__main__":
    main()
