"""The event contract (F47): the AsyncAPI document of every service's subscribers, checked in.

A change to an event or a topic changes `docs/asyncapi.json`, so it shows up in review. After
an intended change, regenerate it with `make contract`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from faststream.specification import AsyncAPI

from weir_gateway.app import create_app as gateway_app
from weir_gateway.settings import GatewaySettings
from weir_harness.app import create_app as harness_app
from weir_harness.settings import HarnessSettings
from weir_memory.app import create_app as memory_app
from weir_memory.settings import MemorySettings
from weir_router.app import create_app as router_app
from weir_router.settings import RouterSettings

pytestmark = pytest.mark.unit

DOCUMENT = Path(__file__).parents[2] / "docs" / "asyncapi.json"


def build_document() -> dict[str, Any]:
    """AsyncAPI 3.0 for all services, with default settings (prefix `weir.`)."""
    apps: list[FastAPI] = [
        gateway_app(GatewaySettings()),
        harness_app(HarnessSettings()),
        router_app(RouterSettings()),
        memory_app(MemorySettings()),
    ]
    spec = AsyncAPI(
        *(app.state.broker for app in apps),
        title="weir events",
        version="1",
        description="Typed events of weir; each type on its own topic `weir.<type>`.",
    )
    document: dict[str, Any] = spec.to_specification().to_jsonable()
    return document


def test_the_checked_in_contract_matches_the_code() -> None:
    document = build_document()
    if os.environ.get("WEIR_UPDATE_CONTRACT") == "1":
        DOCUMENT.write_text(
            json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
    assert DOCUMENT.is_file(), "docs/asyncapi.json is missing: run `make contract`"
    assert json.loads(DOCUMENT.read_text()) == document, (
        "the event contract changed: run `make contract`"
    )


def test_every_event_type_is_in_the_contract() -> None:
    schemas = json.dumps(build_document()["components"]["schemas"])
    for event_type in (
        "chat.requested",
        "memory.context.requested",
        "memory.context.ready",
        "route.requested",
        "route.decided",
        "answer.generate.requested",
        "answer.generated",
        "answer.delta",
        "turn.completed",
        "turn.recorded",
        "step.failed",
        "run.completed",
        "run.failed",
    ):
        assert f'"{event_type}"' in schemas, event_type
