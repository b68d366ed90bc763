"""Calls from the gateway to the owning service's small internal HTTP API (reads a person
waits on: document lists, chunks, memories). Errors become clear HTTP errors at the edge.
Every call carries the service credential (`weir_common.service_auth`)."""

from __future__ import annotations

from typing import Any

import httpx
import structlog
from fastapi import HTTPException, status

from weir_common.service_auth import Token, service_headers

log = structlog.get_logger(__name__)


class InternalClient:
    """An HTTP client for one internal service; None URL means the service is not deployed.

    `token` is the service credential every request carries.
    """

    def __init__(
        self, name: str, base_url: str | None, timeout_s: float = 10.0, *, token: Token = None
    ) -> None:
        self.name = name
        self._client = (
            httpx.AsyncClient(base_url=base_url, timeout=timeout_s, headers=service_headers(token))
            if base_url
            else None
        )

    @property
    def deployed(self) -> bool:
        """False when no URL was given: the service is not part of this deployment."""
        return self._client is not None

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer; 503 when the service is absent or down, its own 4xx passed on."""
        if self._client is None:
            raise HTTPException(
                status.HTTP_503_SERVICE_UNAVAILABLE, f"{self.name} is not connected"
            )
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            detail = f"{self.name} is unavailable: {type(exc).__name__}"
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail) from exc
        if response.status_code >= 400:
            raise HTTPException(response.status_code, self._detail(response))
        return response.json()

    def _detail(self, response: httpx.Response) -> Any:
        """The service's own `detail` of a refusal (weir's words); for a crash (500) or an
        answer that is not weir's JSON, a short reason: raw engine text stays in its log."""
        try:
            body = response.json()
        except ValueError:
            body = None
        detail = body.get("detail") if isinstance(body, dict) else None
        if response.status_code == status.HTTP_500_INTERNAL_SERVER_ERROR or detail is None:
            log.warning("internal.failed", service=self.name, status=response.status_code,
                        body=response.text[:500])  # fmt: skip
            return f"{self.name} failed (HTTP {response.status_code}); try again later"
        return detail

    async def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
