"""The six services' apps as `create_app` builds them (nothing started), for the contract.

Settings are explicit, so the environment (a test stack's `KAFKA_BOOTSTRAP_SERVERS`, a
`TOPIC_PREFIX`) cannot change the document.
"""

from __future__ import annotations

from typing import Any

from faststream.kafka import KafkaBroker

from weir_common.contract import DEFAULT_SERVER, SERVICES
from weir_gateway.app import create_app as gateway_app
from weir_gateway.settings import GatewaySettings
from weir_harness.app import create_app as harness_app
from weir_harness.settings import HarnessSettings
from weir_memory.app import create_app as memory_app
from weir_memory.settings import MemorySettings
from weir_rag.app import create_app as rag_app
from weir_rag.settings import RagSettings
from weir_router.app import create_app as router_app
from weir_router.settings import RouterSettings
from weir_tools.app import create_app as tools_app
from weir_tools.settings import ToolsSettings

DEFAULTS: dict[str, Any] = {"kafka_bootstrap_servers": DEFAULT_SERVER, "topic_prefix": "weir."}


def service_brokers() -> dict[str, KafkaBroker]:
    """Each service's real broker, with its subscribers, by service name."""
    apps = {
        "gateway": gateway_app(GatewaySettings(instance_id="local", **DEFAULTS)),
        "harness": harness_app(HarnessSettings(**DEFAULTS)),
        "router": router_app(RouterSettings(**DEFAULTS)),
        "rag": rag_app(RagSettings(**DEFAULTS)),
        "tools": tools_app(ToolsSettings(mcp_servers=[], **DEFAULTS)),
        "memory": memory_app(MemorySettings(**DEFAULTS)),
    }
    assert tuple(apps) == SERVICES
    return {name: app.state.broker for name, app in apps.items()}
