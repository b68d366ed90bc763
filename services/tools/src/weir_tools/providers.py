"""HTTP providers behind built-in tools: a URL template per provider, and the rag service.

A provider that is not configured answers "not configured"; one that fails answers
"unavailable: …" and is reported disconnected until a call succeeds again. The API key is
put into the URL (`{api_key}`) or a header, and never into logs or error messages.
"""

from __future__ import annotations

import json
from string import Formatter
from urllib.parse import quote

import httpx
import structlog
from pydantic import TypeAdapter, ValidationError

from weir_common.events import Passage, ServerStatus
from weir_common.service_auth import Token, service_headers

from .models import ToolOutcome, truncate
from .settings import HttpProvider

log = structlog.get_logger(__name__)

PASSAGES = TypeAdapter(list[Passage])


class _Health:
    """The last known state of a provider: configured, and whether its last call worked."""

    def __init__(self, name: str, configured: bool, not_configured: str) -> None:
        self.name = name
        self.configured = configured
        self._detail = "" if configured else not_configured
        self._ok = configured

    def status(self) -> ServerStatus:
        """For the catalogue."""
        return ServerStatus(name=self.name, connected=self._ok, detail=self._detail)

    def failed(self, reason: str) -> ToolOutcome:
        self._ok, self._detail = False, reason
        log.warning("provider.failed", provider=self.name, reason=reason)
        return ToolOutcome.failure(f"{self.name} is unavailable: {reason}")

    def succeeded(self) -> None:
        self._ok, self._detail = True, ""


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url.host}"
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer from {exc.request.url.host} in time"
    if isinstance(exc, httpx.RequestError):
        return f"{type(exc).__name__} reaching {exc.request.url.host}"
    return f"{type(exc).__name__}: {exc}"


class HttpTool:
    """A built-in tool answered by GET on a configured URL template."""

    def __init__(self, provider: HttpProvider, client: httpx.AsyncClient, max_chars: int) -> None:
        self._provider = provider
        self._client = client
        self._max_chars = max_chars
        self._health = _Health(
            provider.name,
            provider.url_template is not None,
            f"not configured: set {provider.setting}",
        )

    @property
    def configured(self) -> bool:
        """True when a URL template is set."""
        return self._health.configured

    def status(self) -> ServerStatus:
        """Configured, and whether the last call worked."""
        return self._health.status()

    async def fetch(self, fields: dict[str, str], timeout_s: float) -> ToolOutcome:
        """GET the template filled with `fields` (URL-quoted) and return the body as text."""
        template = self._provider.url_template
        if template is None:
            setting = self._provider.setting
            return ToolOutcome.failure(f"{self._provider.name} is not configured (set {setting})")
        key = self._provider.api_key.get_secret_value() if self._provider.api_key else ""
        values = {name: quote(value, safe="") for name, value in {**fields, "api_key": key}.items()}
        missing = {f for _, f, _, _ in Formatter().parse(template) if f} - values.keys()
        if missing:
            return self._health.failed(f"URL template uses unknown fields {sorted(missing)}")
        headers = {self._provider.api_key_header: key} if self._provider.api_key_header else {}
        try:
            response = await self._client.get(
                template.format_map(values), headers=headers, timeout=timeout_s
            )
            response.raise_for_status()
        except httpx.HTTPError as exc:
            return self._health.failed(_reason(exc))
        self._health.succeeded()
        return ToolOutcome(content=truncate(_body_text(response), self._max_chars))


def _body_text(response: httpx.Response) -> str:
    """JSON compacted (keeping non-ASCII text readable), anything else as it came."""
    try:
        return json.dumps(response.json(), ensure_ascii=False)
    except ValueError:
        return response.text


class KnowledgeBase:
    """`knowledge_search` through the rag service: POST {rag}/internal/search.

    The rag service answers `{"passages": [Passage, ...]}` for `{query, top_k, user_id}`.
    Each search carries the service credential `token`, on that request only: the client is
    shared with the external providers, which must never see it.
    """

    def __init__(
        self,
        rag_url: str | None,
        client: httpx.AsyncClient,
        max_chars: int,
        token: Token = None,
    ) -> None:
        self._url = rag_url.rstrip("/") + "/internal/search" if rag_url else None
        self._client = client
        self._headers = service_headers(token)
        self._max_chars = max_chars
        self._health = _Health(
            "knowledge_base", rag_url is not None, "not connected: set WEIR_RAG_URL"
        )

    @property
    def configured(self) -> bool:
        """True when the rag service's URL is set."""
        return self._health.configured

    def status(self) -> ServerStatus:
        """Connected, and whether the last search worked."""
        return self._health.status()

    async def search(
        self, query: str, top_k: int, user_id: str | None, timeout_s: float
    ) -> ToolOutcome:
        """The passages that match `query`, best first, numbered and cited."""
        if self._url is None:
            return ToolOutcome.failure("the knowledge base is not connected (set WEIR_RAG_URL)")
        body = {"query": query, "top_k": top_k, "user_id": user_id}
        try:
            response = await self._client.post(
                self._url, json=body, headers=self._headers, timeout=timeout_s
            )
            response.raise_for_status()
            passages = PASSAGES.validate_python(response.json().get("passages", []))
        except (httpx.HTTPError, ValidationError, ValueError, AttributeError) as exc:
            return self._health.failed(_reason(exc))
        self._health.succeeded()
        if not passages:
            return ToolOutcome(content=f"no passages in the knowledge base match {query!r}")
        return ToolOutcome(content=truncate(format_passages(passages), self._max_chars))


def format_passages(passages: list[Passage]) -> str:
    """`[1] source (locator): text` blocks, for the model to cite by number."""
    blocks = []
    for i, p in enumerate(passages, start=1):
        where = f"{p.source} ({p.locator})" if p.locator else p.source
        blocks.append(f"[{i}] {where}\n{p.text}")
    return "\n\n".join(blocks)
