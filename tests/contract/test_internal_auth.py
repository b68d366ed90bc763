"""Every internal HTTP API (harness, memory, rag, tools) requires the service credential.

The real apps, as `create_app` builds them, without their lifespan (no engine is needed:
refused calls never reach a handler). Each route the app serves apart from `/health` and
`/ready` is called without the credential and with a wrong one, so a route added later
without the guard fails here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from weir_common.service_auth import DISABLED, MISSING, WRONG, service_headers
from weir_harness.app import create_app as harness_app
from weir_harness.settings import HarnessSettings
from weir_memory.app import create_app as memory_app
from weir_memory.settings import MemorySettings
from weir_rag.app import create_app as rag_app
from weir_rag.settings import RagSettings
from weir_tools.app import create_app as tools_app
from weir_tools.settings import ToolsSettings

pytestmark = pytest.mark.unit

SECRET = "contract-credential"
OPEN = {"/health", "/ready"}
FACTORIES: dict[str, Callable[[SecretStr], FastAPI]] = {
    "harness": lambda token: harness_app(HarnessSettings(weir_service_token=token)),
    "memory": lambda token: memory_app(MemorySettings(weir_service_token=token)),
    "rag": lambda token: rag_app(RagSettings(weir_service_token=token)),
    "tools": lambda token: tools_app(ToolsSettings(mcp_servers=[], weir_service_token=token)),
}
# one call per service the credential must open (what its callers really use)
PROBES = {
    "harness": ("GET", "/runs/x"),
    "memory": ("GET", "/memory/profile/x"),
    "rag": ("GET", "/internal/documents"),
    "tools": ("GET", "/internal/catalog"),
}
SERVICES = sorted(FACTORIES)


@cache
def app(service: str, token: str) -> FastAPI:
    """The service's app with `token` configured ("" for none), shared by the tests."""
    return FACTORIES[service](SecretStr(token))


def client(service: str, token: str) -> TestClient:
    """A client of the app that returns the handler's 500s instead of raising them."""
    return TestClient(app(service, token), raise_server_exceptions=False)


def internal_calls(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route the app documents but the open ones, path parameters
    filled in (the OpenAPI document lists the routes of included routers too)."""
    calls = [
        (method.upper(), re.sub(r"\{[^}]+\}", "x", path))
        for path, operations in app.openapi()["paths"].items()
        if path not in OPEN
        for method in sorted(operations)
    ]
    assert calls, "no internal routes found"
    return calls


@pytest.mark.parametrize("service", SERVICES)
def test_every_internal_route_refuses_a_missing_or_wrong_credential(service: str) -> None:
    http = client(service, SECRET)
    calls = internal_calls(app(service, SECRET))
    assert PROBES[service] in calls
    for method, path in calls:
        missing = http.request(method, path)
        assert (missing.status_code, missing.json()) == (401, {"detail": MISSING}), path
        wrong = http.request(method, path, headers=service_headers("not-" + SECRET))
        assert (wrong.status_code, wrong.json()) == (401, {"detail": WRONG}), path


@pytest.mark.parametrize("service", SERVICES)
def test_the_credential_opens_the_internal_api(service: str) -> None:
    method, path = PROBES[service]
    response = client(service, SECRET).request(method, path, headers=service_headers(SECRET))
    # past the guard; the handler may still fail here, its engines are not started
    assert response.status_code != 401, response.text
    assert DISABLED not in response.text


@pytest.mark.parametrize("service", SERVICES)
def test_without_a_configured_token_the_internal_api_is_disabled(service: str) -> None:
    http = client(service, "")
    for method, path in internal_calls(app(service, "")):
        for headers in ({}, service_headers(SECRET)):
            response = http.request(method, path, headers=headers)
            assert (response.status_code, response.json()) == (503, {"detail": DISABLED}), path


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("token", [SECRET, ""])
def test_health_and_readiness_stay_open(service: str, token: str) -> None:
    http = client(service, token)
    assert http.get("/health").json() == {"status": "ok", "service": service}
    ready = http.get("/ready")  # open, and honest: without its lifespan the app is not ready
    assert ready.status_code == 503
    assert ready.json()["started"] is False
