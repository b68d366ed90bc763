"""The isolation matrix (tests/security/matrix.py) on the real product: the session's
gateway in `proxy` mode, and a second gateway in `token` mode (JWTs and a static token) with
small limits so floods are cheap. No case may leak another user's secret, crash or hang,
and every answer must be the expected one."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator

import pytest

from tests.security.matrix import (
    SMALL_LIMITS,
    Matrix,
    Outcome,
    proxy_gateway,
    summary,
    token_env,
    token_gateway,
)
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import another_gateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
INTERNAL = ("harness", "memory", "rag", "tools")
STATIC_USER = f"bob-static-{secrets.token_hex(3)}"
STATIC = {STATIC_USER: f"st-{secrets.token_hex(16)}"}


@pytest.fixture(scope="module")
async def token_gateway_process(product: Services) -> AsyncIterator[Services]:
    """A second gateway of the same product, in `token` mode, with small limits."""
    extra = {**token_env(STATIC), **SMALL_LIMITS.env()}
    async with another_gateway(product, "iso", extra) as gateway:
        yield gateway


def _verdict(outcomes: list[Outcome]) -> None:
    found = summary(outcomes)
    bad = found["problems"] + found["mismatches"]
    assert (found["leaks"], found["crashes"], found["hangs"], len(found["mismatches"])) == (
        0,
        0,
        0,
        0,
    ), json.dumps(bad, indent=1)[:6000]


async def test_isolation_matrix_in_proxy_and_token_mode(
    product: Services, token_gateway_process: Services, llm: ScriptedLLM
) -> None:
    internal = {name: product.url(name) for name in INTERNAL}
    services = [product, token_gateway_process]
    proxy = Matrix(proxy_gateway(product.url("gateway")), services, llm, internal=internal)
    outcomes = await proxy.run()
    token = token_gateway(
        token_gateway_process.url("gateway"), STATIC, product.service_token, SMALL_LIMITS
    )
    outcomes += await Matrix(
        token, services, llm, foreign=proxy.secrets, user_ids={"B": STATIC_USER}
    ).run()
    assert len(outcomes) >= 150
    _verdict(outcomes)
