"""`python -m weir_gateway`: run the gateway until interrupted."""

from __future__ import annotations

from weir_common import heap

if __name__ == "__main__":  # the service itself, not a test importing its checks
    heap.hold()  # start-up keeps what it builds: no collection until it has started

import sys

from weir_common.bus import KafkaCredentials
from weir_common.runtime import kafka_check, serve
from weir_gateway.app import create_app
from weir_gateway.identity import AuthConfigError
from weir_gateway.settings import GatewaySettings


def main() -> None:
    """Check the identity settings and the broker, then serve HTTP and WebSocket."""
    settings = GatewaySettings()
    bootstrap = settings.kafka_bootstrap_servers
    credentials = KafkaCredentials.of(settings)
    try:
        app = create_app(settings)
    except AuthConfigError as exc:
        print(f"weir: cannot start: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    checks = {f"Kafka at {bootstrap}": lambda: kafka_check(bootstrap, credentials)}
    serve(app, settings, checks, ws_max_size=settings.max_frame_bytes)


if __name__ == "__main__":
    main()
