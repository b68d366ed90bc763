"""JWTs signed by an identity provider's key, found at its JWKS URL (a real HTTP server on
loopback publishing a real RSA public key): the kid picks the key, a key not published is
refused."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from jwt.algorithms import RSAAlgorithm

from weir_common.testing.loopback import serve_on_loopback
from weir_gateway.auth import AuthError, Credentials, Principal
from weir_gateway.identity import Authenticator
from weir_gateway.settings import GatewaySettings
from weir_gateway.tickets import MemoryTickets

pytestmark = pytest.mark.unit


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _provider(key: rsa.RSAPrivateKey, kid: str) -> FastAPI:
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    app = FastAPI()

    @app.get("/.well-known/jwks.json")
    async def jwks() -> dict[str, Any]:
        return {"keys": [{**public, "kid": kid, "use": "sig", "alg": "RS256"}]}

    return app


def _token(key: rsa.RSAPrivateKey, kid: str, **claims: Any) -> str:
    body = {"sub": "erin", "aud": "weir", "iss": "https://idp.test", "exp": time.time() + 60}
    return jwt.encode({**body, **claims}, key, algorithm="RS256", headers={"kid": kid})


async def test_a_token_signed_by_a_published_key_names_its_subject() -> None:
    key, stranger = _key(), _key()
    async with serve_on_loopback(_provider(key, "k1")) as url:
        settings = GatewaySettings(
            auth_mode="token",
            auth_jwks_url=f"{url}/.well-known/jwks.json",
            auth_jwt_audience="weir",
            auth_jwt_issuer="https://idp.test",
        )
        auth = Authenticator(settings, MemoryTickets())

        async def who(token: str) -> Principal:
            return await auth.identify(Credentials({"authorization": f"Bearer {token}"}, None))

        assert await who(_token(key, "k1")) == Principal("erin", "user")
        assert await who(_token(key, "k1", role="admin")) == Principal("erin", "admin")
        for bad in (
            _token(stranger, "k1"),  # the published kid, another key
            _token(stranger, "k9"),  # a kid nobody published
            _token(key, "k1", iss="https://evil.test"),
        ):
            with pytest.raises(AuthError):
                await who(bad)
