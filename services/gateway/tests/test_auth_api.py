"""The identity routes over HTTP and a WebSocket: `/api/me`, one-use tickets, and no
identity in URLs."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, WebSocket, status
from fastapi.testclient import TestClient
from pydantic import SecretStr
from starlette.websockets import WebSocketDisconnect

from weir_gateway import auth_api
from weir_gateway.auth import AuthError, ws_principal
from weir_gateway.identity import Authenticator
from weir_gateway.settings import GatewaySettings
from weir_gateway.tickets import MemoryTickets

pytestmark = pytest.mark.unit
BOB = {"Authorization": "Bearer t2"}


def _client() -> TestClient:
    settings = GatewaySettings(auth_mode="token", auth_tokens=SecretStr("t1=alice:admin,t2=bob"))
    app = FastAPI()
    app.state.settings = settings
    app.state.auth = auth = Authenticator(settings, MemoryTickets())
    app.include_router(auth_api.router)

    @app.websocket("/ws")
    async def who(ws: WebSocket) -> None:
        try:
            principal = await ws_principal(ws, auth)
        except AuthError as exc:
            await ws.accept()
            await ws.close(code=status.WS_1008_POLICY_VIOLATION, reason=exc.reason)
            return
        await ws.accept()
        await ws.send_json({"user_id": principal.user_id, "role": principal.role})
        await ws.close()

    return TestClient(app)


def test_me_names_the_caller_and_refuses_strangers() -> None:
    client = _client()
    assert client.get("/api/me", headers=BOB).json() == {
        "user_id": "bob",
        "role": "user",
        "auth_mode": "token",
    }
    refused = client.get("/api/me", headers={"X-User-Id": "alice", "X-User-Role": "admin"})
    assert refused.status_code == 401
    assert refused.json() == {"detail": "a bearer token is required"}
    assert refused.headers["www-authenticate"] == "Bearer"
    assert client.get("/api/me?token=t1").status_code == 401


def test_an_http_call_with_an_identity_in_its_url_is_refused_whatever_its_headers() -> None:
    client = _client()
    for query in ("token=t1", "user=alice", "token=t2&x=1"):
        refused = client.get(f"/api/me?{query}", headers=BOB)
        assert refused.status_code == 401, query
        assert "URL" in refused.json()["detail"]
    assert client.post("/api/ws-ticket?user=alice", headers=BOB).status_code == 401
    assert client.get("/api/me?tokens=1", headers=BOB).status_code == 200  # only those names


def test_a_ticket_opens_one_websocket() -> None:
    client = _client()
    issued = client.post("/api/ws-ticket", headers=BOB).json()
    assert issued["expires_in"] == 30.0
    with client.websocket_connect(f"/ws?ticket={issued['ticket']}") as ws:
        assert ws.receive_json() == {"user_id": "bob", "role": "user"}
    with (
        pytest.raises(WebSocketDisconnect) as again,
        client.websocket_connect(f"/ws?ticket={issued['ticket']}") as ws,
    ):
        ws.receive_json()
    assert again.value.code == status.WS_1008_POLICY_VIOLATION
    assert "used" in again.value.reason


def test_a_websocket_takes_a_header_token_but_never_one_in_the_url() -> None:
    client = _client()
    with client.websocket_connect("/ws", headers=BOB) as ws:
        assert ws.receive_json()["user_id"] == "bob"
    for query in ("token=t1", "user=alice"):
        with (
            pytest.raises(WebSocketDisconnect) as refused,
            client.websocket_connect(f"/ws?{query}") as ws,
        ):
            ws.receive_json()
        assert "ws-ticket" in refused.value.reason
    assert client.post("/api/ws-ticket").status_code == 401
