"""Who is calling: bearer tokens, trusted upstream headers, or the local default user."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from pydantic import SecretStr

from weir_gateway.auth import Principal, identify, parse_tokens
from weir_gateway.settings import GatewaySettings

pytestmark = pytest.mark.unit


def _settings(tokens: str = "", trust: bool = True) -> GatewaySettings:
    return GatewaySettings(auth_tokens=SecretStr(tokens), trust_user_headers=trust)


def test_tokens_are_parsed_with_roles() -> None:
    assert parse_tokens("t1=alice:admin, t2=bob,bad,=x") == {
        "t1": Principal("alice", "admin"),
        "t2": Principal("bob", "user"),
    }


def test_a_bearer_token_names_the_user() -> None:
    found = identify({"authorization": "Bearer t1"}, {}, _settings("t1=alice:admin"))
    assert found == Principal("alice", "admin")


def test_an_unknown_token_is_refused_even_with_headers() -> None:
    headers = {"authorization": "Bearer nope", "x-user-id": "mallory"}
    assert identify(headers, {}, _settings("t1=alice")) is None


def test_trusted_headers_name_the_user_and_role() -> None:
    found = identify({"x-user-id": "carol", "x-user-role": "admin"}, {}, _settings())
    assert found == Principal("carol", "admin")


def test_headers_are_ignored_when_not_trusted() -> None:
    assert identify({"x-user-id": "carol"}, {}, _settings("t1=alice", trust=False)) is None


def test_without_tokens_the_local_default_user_is_used() -> None:
    assert identify({}, {}, _settings(trust=False)) == Principal("anonymous")


def test_users_reach_only_their_own_data() -> None:
    bob = Principal("bob")
    bob.require_self_or_admin("bob")
    with pytest.raises(HTTPException) as denied:
        bob.require_self_or_admin("alice")
    assert denied.value.status_code == 403
    Principal("root", "admin").require_self_or_admin("alice")
    with pytest.raises(HTTPException):
        bob.require_admin()
