"""Limits at the edge on the real gateway app (its lifespan, hence Kafka, never started):
bodies over the limit are refused before they are read, uploads are capped in files and by
quota, and quotas count per user."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient

from weir_gateway.app import create_app
from weir_gateway.quotas import QuotaExceededError, Quotas
from weir_gateway.settings import GatewaySettings

pytestmark = pytest.mark.unit


def _client(**values: Any) -> TestClient:
    return TestClient(create_app(GatewaySettings(**values)))


def test_a_body_over_the_limit_is_refused_by_its_length() -> None:
    client = _client(max_body_bytes=1000)
    refused = client.post("/api/chat", content=b"x" * 1001, headers={"content-type": "text/plain"})
    assert refused.status_code == 413
    assert refused.json() == {"detail": "request body exceeds 1000 bytes"}


def test_a_streamed_body_over_the_limit_is_refused() -> None:
    client = _client(max_body_bytes=1000)
    head = b'--b\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n\r\n'
    chunks = iter([head, *(b"y" * 300 for _ in range(5)), b"\r\n--b--\r\n"])  # chunked
    kind = {"content-type": "multipart/form-data; boundary=b"}
    refused = client.post("/api/knowledge/upload", content=chunks, headers=kind)
    assert refused.status_code == 413


def test_an_upload_has_at_most_max_upload_files() -> None:
    client = _client(max_upload_files=2)
    files = [("files", (f"f{i}.txt", b"hello", "text/plain")) for i in range(3)]
    refused = client.post("/api/knowledge/upload", files=files)
    assert refused.status_code == 413
    assert "at most 2" in refused.json()["detail"]


def test_uploads_beyond_the_quota_get_429_with_retry_after() -> None:
    client = _client(rate_limit_upload="2/hour")
    files = [("files", (f"f{i}.txt", b"hello", "text/plain")) for i in range(3)]
    refused = client.post("/api/knowledge/upload", files=files)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1


async def test_quotas_count_per_user_and_runs_in_flight() -> None:
    quotas = Quotas(GatewaySettings(rate_limit_chat="2/minute", max_inflight_runs=1))
    await quotas.spend("chat", "alice")
    await quotas.spend("chat", "alice")
    with pytest.raises(QuotaExceededError) as used_up:
        await quotas.spend("chat", "alice")
    assert used_up.value.code == "rate_limited"
    assert 1 <= used_up.value.retry_after_s <= 60
    await quotas.spend("chat", "bob")
    quotas.admit_run("alice", 0)
    with pytest.raises(QuotaExceededError) as busy:
        quotas.admit_run("alice", 1)
    assert busy.value.code == "too_many_runs"


async def test_an_unreachable_quota_store_refuses_with_unavailable_not_a_crash() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    quotas = Quotas(GatewaySettings(redis_url=f"redis://127.0.0.1:{port}/0"))
    with pytest.raises(QuotaExceededError) as refused:
        await quotas.spend("chat", "ann")
    assert (refused.value.code, refused.value.status) == ("unavailable", 503)
    assert "try again" in refused.value.reason
