"""Container health check: exit 0 only when this service's `/ready` answers `{"ready": true}`.

`/ready` answers 503 when the service is not ready (an engine down, a consumer without
partitions); this script also reads the body, so only an explicit `{"ready": true}` passes.
It uses only the standard library, because the image has no curl. The port is the
service's own `SERVICE_PORT`.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request


def ready(body: bytes) -> bool:
    """True when a `/ready` body says the service is ready."""
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("ready") is True


def main() -> int:
    """Ask the local service once; 0 when ready, 1 otherwise."""
    url = f"http://127.0.0.1:{os.environ.get('SERVICE_PORT', '8000')}/ready"
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return 0 if ready(response.read()) else 1
    except OSError as exc:
        print(f"not ready: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
