"""The WebSocket door on the real gateway app (its lifespan, hence Kafka, never started):
every malformed frame gets a clear error, and the connection carries on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from weir_gateway.app import create_app
from weir_gateway.internal import InternalClient
from weir_gateway.settings import GatewaySettings

pytestmark = pytest.mark.unit


@pytest.fixture
def client() -> TestClient:
    app = create_app(GatewaySettings(max_frame_bytes=2000, max_message_chars=50))
    app.state.runs = InternalClient("the harness", None)  # opened by the lifespan otherwise
    return TestClient(app)


def _exchange(client: TestClient, sent: list[str]) -> list[dict[str, Any]]:
    """The `ready` frame, then one answer per frame sent (each followed by a ping)."""
    frames: list[dict[str, Any]] = []
    with client.websocket_connect("/ws/chat") as ws:
        frames.append(ws.receive_json())
        for text in sent:
            ws.send_text(text)
            frames.append(ws.receive_json())
        ws.send_text('{"type": "ping"}')
        frames.append(ws.receive_json())
    return frames


def test_malformed_frames_get_clear_errors_and_the_socket_carries_on(client: TestClient) -> None:
    sent = [
        "not json",
        "[1, 2]",
        '{"type": "shout", "text": "hi"}',
        '{"type": "chat"}',
        '{"type": "chat", "text": "hi", "conversation_id": "no spaces allowed"}',
        json.dumps({"type": "chat", "text": "x" * 51}),
        json.dumps({"type": "chat", "text": "y" * 2100}),
        '{"type": "confirm", "run_id": "r1", "call_id": "c1"}',
    ]
    ready, *answers, pong = _exchange(client, sent)
    assert ready["type"] == "ready"
    assert ready["seq"] == 0
    assert [a["code"] for a in answers] == [
        "bad_json", "unknown_type", "unknown_type", "invalid", "invalid", "too_large",
        "too_large", "invalid",
    ]  # fmt: skip
    assert all(a["type"] == "error" and a["message"] for a in answers)
    assert "expected chat, resume, confirm or ping" in answers[2]["message"]
    assert answers[3]["message"] == "chat.text: Field required"
    assert pong["type"] == "pong"
    assert [f["seq"] for f in (ready, *answers, pong)] == list(range(len(sent) + 2))


def test_the_openai_door_refuses_in_openai_s_shape_before_any_run() -> None:
    settings = GatewaySettings(auth_mode="token", auth_tokens=SecretStr("st-key-1=ann"))
    client = TestClient(create_app(settings))
    key = {"Authorization": "Bearer st-key-1"}
    assert client.get("/v1/models").status_code == 401
    assert client.get("/v1/models").json()["error"]["code"] == "invalid_api_key"
    models = client.get("/v1/models", headers=key).json()
    assert [m["id"] for m in models["data"]] == ["weir", "weir-chat", "weir-rag", "weir-agent"]
    refused = {
        "unknown model": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "no messages": {"model": "weir-chat", "messages": []},
        "assistant last": {"model": "weir-chat",
                           "messages": [{"role": "assistant", "content": "hi"}]},
    }  # fmt: skip
    answers = {k: client.post("/v1/chat/completions", json=v, headers=key)
               for k, v in refused.items()}  # fmt: skip
    assert {k: r.status_code for k, r in answers.items()} == {
        "unknown model": 404, "no messages": 400, "assistant last": 400,
    }  # fmt: skip
    assert answers["unknown model"].json()["error"]["param"] == "model"
    assert answers["no messages"].json()["error"]["type"] == "invalid_request_error"
    broken = client.post("/v1/chat/completions", content=b"{", headers=key)
    assert broken.status_code == 400
