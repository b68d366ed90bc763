"""Who is calling, in each mode: local (loopback only), token (static and JWT), proxy
(trusted upstreams only); one-use WebSocket tickets; the role never from a client header."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jwt
import pytest
from fastapi import HTTPException
from pydantic import SecretStr

from weir_gateway.auth import AuthError, Credentials, Principal
from weir_gateway.identity import AuthConfigError, Authenticator, parse_tokens
from weir_gateway.settings import GatewaySettings
from weir_gateway.tickets import MemoryTickets

pytestmark = pytest.mark.unit
SECRET = "a-test-secret-of-at-least-32-bytes!!"


def _auth(**values: Any) -> Authenticator:
    return Authenticator(GatewaySettings(**values), MemoryTickets())


def _token_auth(**values: Any) -> Authenticator:
    return _auth(
        auth_mode="token",
        auth_tokens=SecretStr("t1=alice:admin,t2=bob"),
        auth_jwt_secret=SecretStr(SECRET),
        auth_jwt_audience="weir",
        **values,
    )


def _jwt(sub: str = "carol", *, exp_in: float = 60, aud: str = "weir", **claims: Any) -> str:
    body = {"sub": sub, "aud": aud, "exp": int(time.time() + exp_in), **claims}
    return jwt.encode(body, SECRET, algorithm="HS256")


def _bearer(token: str, **headers: str) -> Credentials:
    return Credentials({"authorization": f"Bearer {token}", **headers}, "203.0.113.9")


async def _refused(auth: Authenticator, creds: Credentials) -> str:
    with pytest.raises(AuthError) as refused:
        await auth.identify(creds)
    return refused.value.reason


def test_tokens_are_parsed_with_roles() -> None:
    assert parse_tokens("t1=alice:admin, t2=bob,bad,=x") == {
        "t1": Principal("alice", "admin"),
        "t2": Principal("bob", "user"),
    }


async def test_local_mode_is_the_one_local_user_whatever_the_headers_say() -> None:
    auth = _auth()
    creds = Credentials({"x-user-id": "mallory", "x-user-role": "user"}, "127.0.0.1")
    assert await auth.identify(creds) == Principal("local", "admin")


def test_local_mode_refuses_to_serve_beyond_loopback() -> None:
    with pytest.raises(AuthConfigError, match="loopback"):
        _auth(service_host="0.0.0.0")
    _auth(service_host="::1")


def test_modes_that_could_verify_nobody_refuse_to_start() -> None:
    with pytest.raises(AuthConfigError, match="AUTH_TOKENS"):
        _auth(auth_mode="token")
    with pytest.raises(AuthConfigError, match="AUTH_PROXY_TRUSTED"):
        _auth(auth_mode="proxy")
    with pytest.raises(AuthConfigError, match="AUTH_PROXY_TRUSTED"):
        _auth(auth_mode="proxy", auth_proxy_trusted="not-an-address")


async def test_a_static_token_names_user_and_role() -> None:
    auth = _token_auth()
    assert await auth.identify(_bearer("t1")) == Principal("alice", "admin")
    assert await auth.identify(_bearer("t2")) == Principal("bob", "user")


async def test_token_mode_ignores_identity_headers() -> None:
    auth = _token_auth()
    forged = _bearer("t2", **{"x-user-id": "alice", "x-user-role": "admin"})
    assert await auth.identify(forged) == Principal("bob", "user")
    assert "required" in await _refused(auth, Credentials({"x-user-id": "alice"}, "127.0.0.1"))
    assert await _refused(auth, _bearer("nope")) == "invalid token"


async def test_a_jwt_names_the_user_and_its_claim_the_role() -> None:
    auth = _token_auth()
    assert await auth.identify(_bearer(_jwt())) == Principal("carol", "user")
    assert await auth.identify(_bearer(_jwt(role="admin"))) == Principal("carol", "admin")
    assert await auth.identify(_bearer(_jwt(role=["x", "admin"]))) == Principal("carol", "admin")
    custom = _token_auth(auth_role_claim="weir_role")
    assert await custom.identify(_bearer(_jwt(role="admin"))) == Principal("carol", "user")


async def test_bad_jwts_are_refused_with_the_reason() -> None:
    auth = _token_auth()
    assert await _refused(auth, _bearer(_jwt(exp_in=-120))) == "token expired"
    assert "audience" in await _refused(auth, _bearer(_jwt(aud="other")))
    forged = jwt.encode({"sub": "carol", "aud": "weir", "exp": time.time() + 60}, "x" * 32)
    assert await _refused(auth, _bearer(forged)) == "invalid token"
    no_exp = jwt.encode({"sub": "carol", "aud": "weir"}, SECRET)
    assert "exp" in await _refused(auth, _bearer(no_exp))
    unsigned = jwt.encode({"sub": "carol", "aud": "weir", "exp": time.time() + 60}, None, "none")  # type: ignore[arg-type]
    assert await _refused(auth, _bearer(unsigned)) == "invalid token"
    assert "malformed" in await _refused(auth, _bearer(_jwt(sub="*")))


async def test_proxy_headers_count_only_from_trusted_addresses() -> None:
    auth = _auth(auth_mode="proxy", auth_proxy_trusted="10.0.0.0/8, 127.0.0.1")
    headers = {"x-user-id": "dave", "x-user-role": "admin"}
    assert await auth.identify(Credentials(headers, "10.1.2.3")) == Principal("dave", "admin")
    assert await auth.identify(Credentials(headers, "127.0.0.1")) == Principal("dave", "admin")
    assert "trusted proxy" in await _refused(auth, Credentials(headers, "192.168.1.5"))
    assert "trusted proxy" in await _refused(auth, Credentials(headers, None))
    assert "X-User-Id" in await _refused(auth, Credentials({}, "10.1.2.3"))
    odd = Credentials({"x-user-id": "a:b*"}, "10.1.2.3")
    assert "malformed" in await _refused(auth, odd)


async def test_a_ticket_works_once_and_expires() -> None:
    auth = _token_auth(ws_ticket_ttl_s=0.05)
    ticket = await auth.issue_ticket(Principal("bob"))
    once = Credentials({}, "203.0.113.9", ticket)
    assert await auth.identify(once) == Principal("bob")
    assert "used" in await _refused(auth, once)
    late = await auth.issue_ticket(Principal("bob"))
    await asyncio.sleep(0.06)
    assert "expired" in await _refused(auth, Credentials({}, None, late))


def test_users_reach_only_their_own_data() -> None:
    bob = Principal("bob")
    bob.require_self_or_admin("bob")
    with pytest.raises(HTTPException) as denied:
        bob.require_self_or_admin("alice")
    assert denied.value.status_code == 403
    Principal("root", "admin").require_self_or_admin("alice")
    with pytest.raises(HTTPException):
        bob.require_admin()
