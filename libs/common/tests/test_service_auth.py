"""The service credential: the guard on a tiny real app, and the header callers send."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from weir_common.service_auth import (
    DISABLED,
    MISSING,
    WRONG,
    Token,
    require_service_token,
    service_headers,
)
from weir_common.settings import WeirSettings
from weir_common.testing.loopback import serve_on_loopback

pytestmark = pytest.mark.unit

SECRET = "s3cret-credential"


def guarded_app(token: Token) -> FastAPI:
    app = FastAPI()
    router = APIRouter(dependencies=[require_service_token(token)])

    @router.get("/internal/thing")
    async def thing() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(router)
    return app


@pytest.mark.parametrize(
    ("headers", "status", "detail"),
    [
        ({}, 401, MISSING),
        ({"Authorization": "Bearer "}, 401, MISSING),
        ({"Authorization": f"Basic {SECRET}"}, 401, MISSING),
        ({"Authorization": "Bearer wrong"}, 401, WRONG),
        ({"Authorization": f"Bearer {SECRET}x"}, 401, WRONG),
        ({"Authorization": f"bearer {SECRET}"}, 200, None),
        (service_headers(SECRET), 200, None),
    ],
)
def test_the_guard_admits_only_the_credential(
    headers: dict[str, str], status: int, detail: str | None
) -> None:
    client = TestClient(guarded_app(SecretStr(SECRET)))
    response = client.get("/internal/thing", headers=headers)
    assert response.status_code == status
    if detail is not None:
        assert response.json() == {"detail": detail}
        assert response.headers["www-authenticate"] == "Bearer"
    assert client.get("/health").status_code == 200


@pytest.mark.parametrize("token", [None, "", SecretStr("")])
def test_without_a_configured_token_the_internal_api_is_disabled(token: Token) -> None:
    client = TestClient(guarded_app(token))
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer anything"}):
        response = client.get("/internal/thing", headers=headers)
        assert (response.status_code, response.json()) == (503, {"detail": DISABLED})
    assert client.get("/health").status_code == 200


def test_headers_carry_the_token_only_when_there_is_one() -> None:
    assert service_headers(SecretStr(SECRET)) == {"Authorization": f"Bearer {SECRET}"}
    assert service_headers(SECRET) == {"Authorization": f"Bearer {SECRET}"}
    assert service_headers(None) == {}
    assert service_headers(SecretStr("")) == {}


def test_the_setting_is_a_secret_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WEIR_SERVICE_TOKEN", raising=False)
    monkeypatch.setenv("WEIR_CONFIG", "no-such-weir.toml")
    assert WeirSettings().weir_service_token.get_secret_value() == ""
    monkeypatch.setenv("WEIR_SERVICE_TOKEN", SECRET)
    settings = WeirSettings()
    assert settings.weir_service_token.get_secret_value() == SECRET
    assert SECRET not in repr(settings)


async def test_a_real_client_with_the_headers_passes_over_loopback() -> None:
    async with serve_on_loopback(guarded_app(SECRET)) as url, httpx.AsyncClient() as http:
        assert (await http.get(f"{url}/internal/thing")).status_code == 401
        ok = await http.get(f"{url}/internal/thing", headers=service_headers(SECRET))
        assert (ok.status_code, ok.json()) == (200, {"ok": True})
