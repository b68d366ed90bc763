"""`python -m weir_gateway`: run the gateway until interrupted."""

from __future__ import annotations

from weir_common.runtime import kafka_check, serve
from weir_gateway.app import create_app
from weir_gateway.settings import GatewaySettings


def main() -> None:
    """Check the broker, then serve HTTP and WebSocket."""
    settings = GatewaySettings()
    bootstrap = settings.kafka_bootstrap_servers
    serve(create_app(settings), settings, {f"Kafka at {bootstrap}": lambda: kafka_check(bootstrap)})


if __name__ == "__main__":
    main()
