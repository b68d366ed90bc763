"""Identity on the real product (issue 11): a gateway in `token` mode believes only verified
JWTs, never a header or a URL; browsers get one-use WebSocket tickets; `local` mode refuses
to listen beyond loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest
import websockets

from weir_common.events import new_id
from weir_deploy.services import Services

from .conftest import ChatClient, another_gateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
SECRET = "e2e-jwt-secret-that-is-long-enough-for-hs256"


def token(sub: str, *, exp_in: float = 300, aud: str = "weir", **claims: Any) -> str:
    """A JWT signed with the gateway's secret."""
    body = {"sub": sub, "aud": aud, "exp": int(time.time() + exp_in), **claims}
    return jwt.encode(body, SECRET, algorithm="HS256")


def bearer(value: str) -> dict[str, str]:
    """The `Authorization` header of `value`."""
    return {"Authorization": f"Bearer {value}"}


@pytest.fixture(scope="module")
async def token_gateway(product: Services) -> AsyncIterator[Services]:
    """A second gateway of the same product, in `token` mode with JWTs."""
    auth = {"AUTH_MODE": "token", "AUTH_JWT_SECRET": SECRET, "AUTH_JWT_AUDIENCE": "weir"}
    async with another_gateway(product, "tok", auth) as gateway:
        yield gateway


async def test_only_a_verified_jwt_names_the_caller(token_gateway: Services) -> None:
    alice, admin = token(f"alice-{new_id()[:4]}"), token("ops", role="admin")
    async with httpx.AsyncClient(base_url=token_gateway.url("gateway"), timeout=10) as http:
        me = (await http.get("/api/me", headers=bearer(alice))).json()
        assert (me["role"], me["auth_mode"]) == ("user", "token")
        assert (await http.get("/api/me", headers=bearer(admin))).json()["role"] == "admin"
        refused = {
            "forged headers": await http.get(
                "/api/me", headers={"X-User-Id": "ops", "X-User-Role": "admin"}
            ),
            "token in the URL": await http.get("/api/me", params={"token": admin}),
            "expired": await http.get("/api/me", headers=bearer(token("x", exp_in=-300))),
            "other audience": await http.get("/api/me", headers=bearer(token("x", aud="no"))),
            "wrong key": await http.get(
                "/api/me", headers=bearer(jwt.encode({"sub": "ops"}, "k" * 40, "HS256"))
            ),
        }
        assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 401)
        assert refused["expired"].json()["detail"] == "token expired"
        other = await http.get(f"/api/memory/items/ops-{new_id()[:4]}", headers=bearer(alice))
        assert other.status_code == 403


async def test_a_websocket_chats_with_a_bearer_header_or_a_ticket(token_gateway: Services) -> None:
    user = f"bob-{new_id()[:4]}"
    url = token_gateway.url("gateway").replace("http", "ws") + "/ws/chat"
    async with websockets.connect(url, additional_headers=bearer(token(user))) as ws:
        client = ChatClient(ws)
        assert (await client.recv())["user_id"] == user
        frames = await client.turn("Hello there, how are you?")
        assert frames[-1]["type"] == "done", json.dumps(frames)
    async with httpx.AsyncClient(base_url=token_gateway.url("gateway"), timeout=10) as http:
        ticket = (await http.post("/api/ws-ticket", headers=bearer(token(user)))).json()["ticket"]
    async with websockets.connect(f"{url}?ticket={ticket}") as ws:
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["user_id"] == user
    for query in (f"ticket={ticket}", f"token={token(user)}", f"user={user}", ""):
        async with websockets.connect(f"{url}?{query}") as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None, query
        assert closed.value.rcvd.code == 1008, query


def test_local_mode_refuses_to_listen_beyond_loopback() -> None:
    env = {**os.environ, "AUTH_MODE": "local", "SERVICE_HOST": "0.0.0.0", "SERVICE_PORT": "0"}
    command = [sys.executable, "-m", "weir_gateway"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "AUTH_MODE=local" in done.stderr, done.stderr
    assert "loopback" in done.stderr
