"""A service loads only the engine clients it reaches.

pymilvus (with pandas) costs ~1.7 s of CPU to import and the Elasticsearch client ~1 s; every
start of a service pays its imports, and the stack starts six of them on two cores (`make run`,
every restart under supervision, every end-to-end test).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

# what the default engines do not need at import: Milvus is opened (and imported) by the
# services that use it, Elasticsearch only when ES_URL chooses it, litellm at the first call
_NOT_AT_IMPORT = ("pymilvus", "pandas", "elasticsearch", "litellm")


@pytest.mark.parametrize("service", ["gateway", "router", "rag", "tools", "memory", "harness"])
def test_importing_a_service_leaves_the_heavy_clients_unloaded(service: str) -> None:
    probe = (
        f"import sys, weir_{service}.app; "
        f"print(' '.join(m for m in {_NOT_AT_IMPORT!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == [], done.stdout
