"""Built-in tools: `time` offline; weather, search and knowledge against a real HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from weir_tools.builtins import TIME, Builtin, CallContext, http_builtins
from weir_tools.settings import ToolsSettings

CTX = CallContext(timeout_s=5, user_id="u1")


class Provider(BaseHTTPRequestHandler):
    """A tiny weather / search / rag provider: answers from the request, records it."""

    seen: list[dict[str, Any]] = []  # noqa: RUF012 - shared with the test on purpose
    authorization: list[str | None] = []  # noqa: RUF012 - the Authorization header of each GET

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.authorization.append(self.headers.get("Authorization"))
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.seen.append({"path": url.path, "query": query, "key": self.headers.get("X-Key")})
        if url.path == "/weather":
            self._json(200, {"city": query.get("q"), "temp_c": 12.5, "sky": "小雨"})
        elif url.path == "/search":
            self._json(200, {"results": [{"title": f"about {query.get('q')}", "n": query["n"]}]})
        elif url.path == "/text":
            self._reply(200, b"plain words", "text/plain")
        else:
            self._json(500, {"error": "boom"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "body": body})
        passage = {"chunk_id": "c1", "document_id": "d1", "source": "manual.pdf",
                   "locator": "p. 3", "text": f"about {body['query']}", "score": 0.9}  # fmt: skip
        self._json(200, {"passages": [passage] if body["query"] != "nothing" else []})

    def _json(self, status: int, payload: object) -> None:
        self._reply(status, json.dumps(payload).encode(), "application/json")

    def _reply(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def provider_url() -> Iterator[str]:
    """A real HTTP server on a free loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def tools(settings: ToolsSettings, client: httpx.AsyncClient) -> dict[str, Builtin]:
    return {b.info.name: b for b in http_builtins(settings, client)}


@pytest.mark.unit
async def test_time_in_an_iana_zone_and_utc_by_default() -> None:
    tokyo = json.loads((await TIME.run({"timezone": "Asia/Tokyo"}, CTX)).content)
    assert tokyo["timezone"] == "Asia/Tokyo"
    assert tokyo["utc_offset"] == "+0900"
    assert datetime.fromisoformat(tokyo["datetime"]).utcoffset() is not None
    assert json.loads((await TIME.run({}, CTX)).content)["timezone"] == "UTC"


@pytest.mark.unit
async def test_time_rejects_an_unknown_zone_plainly() -> None:
    outcome = await TIME.run({"timezone": "Mars/Olympus"}, CTX)
    assert outcome.is_error
    assert outcome.content.startswith("unknown timezone 'Mars/Olympus'")


@pytest.mark.unit
async def test_unconfigured_providers_say_so_and_are_reported(client: httpx.AsyncClient) -> None:
    found = tools(ToolsSettings(), client)
    answers = {n: await b.run({"city": "Paris", "query": "x"}, CTX) for n, b in found.items()}
    assert answers["weather"].content == "weather is not configured (set WEATHER_URL_TEMPLATE)"
    assert answers["web_search"].content == "web_search is not configured (set SEARCH_URL_TEMPLATE)"
    assert answers["knowledge_search"].content == (
        "the knowledge base is not connected (set WEIR_RAG_URL)"
    )
    assert all(a.is_error and not a.stored for a in answers.values())
    statuses = {b.status().name: b.status() for b in found.values() if b.status}
    assert not any(s.connected for s in statuses.values())
    assert statuses["knowledge_base"].detail == "not connected: set WEIR_RAG_URL"
    assert found["weather"].info.description.endswith("Not configured on this deployment.")


@pytest.mark.unit
async def test_weather_fills_the_template_with_city_and_key(
    provider_url: str, client: httpx.AsyncClient
) -> None:
    settings = ToolsSettings(
        weather_url_template=provider_url + "/weather?q={city}&key={api_key}",
        weather_api_key="s3cret&x",  # type: ignore[arg-type]
    )
    outcome = await tools(settings, client)["weather"].run({"city": "São Paulo"}, CTX)
    assert not outcome.is_error
    assert json.loads(outcome.content) == {"city": "São Paulo", "temp_c": 12.5, "sky": "小雨"}
    assert Provider.seen[-1]["query"]["key"] == "s3cret&x"  # quoted, so it stays one field


@pytest.mark.unit
async def test_search_sends_the_key_as_a_header(
    provider_url: str, client: httpx.AsyncClient
) -> None:
    settings = ToolsSettings(
        search_url_template=provider_url + "/search?q={query}&n={max_results}",
        search_api_key="k1",  # type: ignore[arg-type]
        search_api_key_header="X-Key",
    )
    outcome = await tools(settings, client)["web_search"].run(
        {"query": "kafka", "max_results": 3}, CTX
    )
    assert json.loads(outcome.content) == {"results": [{"title": "about kafka", "n": "3"}]}
    assert Provider.seen[-1]["key"] == "k1"


@pytest.mark.unit
async def test_failing_provider_is_unavailable_until_it_answers_again(
    provider_url: str, client: httpx.AsyncClient
) -> None:
    broken = tools(ToolsSettings(weather_url_template=provider_url + "/down?q={city}"), client)
    outcome = await broken["weather"].run({"city": "Oslo"}, CTX)
    assert outcome.is_error
    assert not outcome.stored
    assert outcome.content == "weather is unavailable: HTTP 500 from 127.0.0.1"
    status = broken["weather"].status
    assert status is not None
    assert not status().connected
    fixed = tools(ToolsSettings(weather_url_template=provider_url + "/text?q={city}"), client)
    assert (await fixed["weather"].run({"city": "Oslo"}, CTX)).content == "plain words"


@pytest.mark.unit
async def test_unreachable_provider_is_unavailable(client: httpx.AsyncClient) -> None:
    settings = ToolsSettings(search_url_template="http://127.0.0.1:1/search?q={query}")
    outcome = await tools(settings, client)["web_search"].run({"query": "x"}, CTX)
    assert outcome.content == "web_search is unavailable: ConnectError reaching 127.0.0.1"


@pytest.mark.unit
async def test_knowledge_search_posts_to_the_rag_hook(
    provider_url: str, client: httpx.AsyncClient
) -> None:
    knowledge = tools(ToolsSettings(weir_rag_url=provider_url + "/"), client)["knowledge_search"]
    outcome = await knowledge.run({"query": "backups", "top_k": 2}, CTX)
    assert outcome.content == "[1] manual.pdf (p. 3)\nabout backups"
    assert Provider.seen[-1] == {
        "path": "/internal/search",
        "body": {"query": "backups", "top_k": 2, "user_id": "u1"},
    }
    empty = await knowledge.run({"query": "nothing"}, CTX)
    assert not empty.is_error
    assert empty.content == "no passages in the knowledge base match 'nothing'"


@pytest.mark.unit
async def test_the_service_credential_never_reaches_an_external_provider(
    provider_url: str, client: httpx.AsyncClient
) -> None:
    settings = ToolsSettings(
        weather_url_template=provider_url + "/weather?q={city}",
        weir_rag_url=provider_url,
        weir_service_token="internal-only",  # type: ignore[arg-type]
    )
    found = tools(settings, client)
    await found["knowledge_search"].run({"query": "backups"}, CTX)
    outcome = await found["weather"].run({"city": "Oslo"}, CTX)
    assert not outcome.is_error
    assert Provider.authorization[-1] is None
