"""The launcher gives every service of a stack one credential (nothing is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.service_auth import TOKEN_ENV
from weir_deploy.base import service_token
from weir_deploy.services import Services
from weir_deploy.stack import Stack

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def no_token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


def test_a_new_token_is_random_and_long() -> None:
    first, second = service_token(), service_token()
    assert first != second
    assert len(first) >= 43  # 32 random bytes, URL-safe base64


def test_a_token_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "from-the-shell")
    assert service_token() == "from-the-shell"
    assert service_token({TOKEN_ENV: "given"}) == "given"
    assert service_token({TOKEN_ENV: ""}) != ""


def test_every_service_of_a_launch_gets_the_same_token(tmp_path: Path) -> None:
    services = Services({}, tmp_path, names=("harness", "memory"))
    token = services.base_env[TOKEN_ENV]
    assert token == services.service_token
    assert services.headers() == {"Authorization": f"Bearer {token}"}


def test_services_started_from_one_stack_env_share_its_token(tmp_path: Path) -> None:
    stack = Stack(("redis",), ephemeral=True, data_dir=tmp_path)
    env = stack.services_env()
    assert env[TOKEN_ENV] == stack.service_token
    assert TOKEN_ENV not in stack.env()  # nor in stack.env on disk
    front = Services(env, tmp_path, names=("gateway",), gateway_port=18999)
    back = Services(env, tmp_path, names=("memory",))
    assert front.service_token == back.service_token == stack.service_token
    assert Stack(("redis",), ephemeral=True, data_dir=tmp_path).service_token != stack.service_token


def test_the_stack_takes_the_token_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "operator-chosen")
    stack = Stack(("redis",), ephemeral=True, data_dir=tmp_path)
    assert stack.services_env()[TOKEN_ENV] == "operator-chosen"
    assert Services(stack.env(), tmp_path, names=("rag",)).service_token == "operator-chosen"
