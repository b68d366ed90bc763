"""JWT bearer tokens (PyJWT): an HS256 shared secret or the signing keys of a JWKS URL."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import jwt

from weir_gateway.auth import AuthError, Principal

if TYPE_CHECKING:
    from weir_gateway.settings import GatewaySettings

ASYMMETRIC = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA"]


class JwtVerifier:
    """Checks signature, expiry, audience and issuer; `sub` is the user."""

    def __init__(
        self,
        *,
        secret: str | None,
        jwks_url: str | None,
        audience: str | None,
        issuer: str | None,
        role_claim: str,
        admin_role: str,
        leeway_s: float,
    ) -> None:
        self._secret = secret
        self._jwks = jwt.PyJWKClient(jwks_url, cache_keys=True, timeout=5) if jwks_url else None
        self._audience = audience
        self._issuer = issuer
        self._role_claim = role_claim
        self._admin_role = admin_role
        self._leeway = leeway_s

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> JwtVerifier | None:
        """The verifier the settings describe, or None when JWTs are not configured."""
        secret = settings.auth_jwt_secret.get_secret_value() or None
        if secret is None and settings.auth_jwks_url is None:
            return None
        return cls(
            secret=secret,
            jwks_url=settings.auth_jwks_url,
            audience=settings.auth_jwt_audience,
            issuer=settings.auth_jwt_issuer,
            role_claim=settings.auth_role_claim,
            admin_role=settings.auth_admin_role,
            leeway_s=settings.auth_jwt_leeway_s,
        )

    async def verify(self, token: str) -> Principal:
        """The principal of a valid token; AuthError naming what is wrong otherwise."""
        try:
            claims = await self._decode(token)
        except jwt.ExpiredSignatureError:
            raise AuthError("token expired") from None
        except jwt.InvalidAudienceError:
            raise AuthError("token audience is not accepted") from None
        except jwt.InvalidIssuerError:
            raise AuthError("token issuer is not accepted") from None
        except jwt.MissingRequiredClaimError as exc:
            raise AuthError(f"token lacks the {exc.claim} claim") from None
        except (jwt.InvalidTokenError, jwt.PyJWKClientError):
            raise AuthError("invalid token") from None
        return Principal(str(claims["sub"]), "admin" if self._is_admin(claims) else "user")

    async def _decode(self, token: str) -> dict[str, Any]:
        if self._jwks is not None:
            key = await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)
            return self._check(token, key.key, ASYMMETRIC)
        assert self._secret is not None
        return self._check(token, self._secret, ["HS256"])

    def _check(self, token: str, key: Any, algorithms: list[str]) -> dict[str, Any]:
        return jwt.decode(
            token,
            key,
            algorithms=algorithms,
            audience=self._audience,
            issuer=self._issuer,
            leeway=self._leeway,
            options={"require": ["exp", "sub"]},
        )

    def _is_admin(self, claims: dict[str, Any]) -> bool:
        role = claims.get(self._role_claim)
        if isinstance(role, list):
            return self._admin_role in role
        return role == self._admin_role
