"""`python -m weir_router`: run the router until interrupted."""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

from weir_common.bus import KafkaCredentials
from weir_common.runtime import kafka_check, serve
from weir_router.app import create_app
from weir_router.settings import RouterSettings


def main() -> None:
    """Check the broker, then serve."""
    settings = RouterSettings()
    bootstrap = settings.kafka_bootstrap_servers
    credentials = KafkaCredentials.of(settings)
    checks = {f"Kafka at {bootstrap}": lambda: kafka_check(bootstrap, credentials)}
    serve(create_app(settings), settings, checks)


if __name__ == "__main__":
    main()
