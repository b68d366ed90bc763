"""The callers of the internal APIs send the service credential, over real HTTP on loopback:
the gateway's clients of rag, memory and the harness, and the tools service's
knowledge_search against rag. The servers are the services' own guarded routes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI, HTTPException
from pydantic import SecretStr

from weir_common.events import Passage
from weir_common.testing.loopback import serve_on_loopback
from weir_gateway import memory_api
from weir_gateway.app import create_app as gateway_app
from weir_gateway.internal import InternalClient
from weir_gateway.settings import GatewaySettings
from weir_harness.api import make_router as harness_router
from weir_harness.repository import RunRepository
from weir_memory.app import create_app as memory_app
from weir_memory.settings import MemorySettings
from weir_rag.app import create_app as rag_app
from weir_rag.settings import RagSettings
from weir_tools.builtins import CallContext, http_builtins
from weir_tools.settings import ToolsSettings

pytestmark = pytest.mark.unit

SECRET = SecretStr("callers-credential")
PASSAGE = Passage(chunk_id="c1", document_id="d1", source="manual.pdf", text="about backups")


class Knowledge:
    """What rag's routes read from `app.state.knowledge`, without its engines."""

    async def search(self, *_: Any) -> list[Passage]:
        return [PASSAGE]

    async def documents(self, *_: Any) -> tuple[list[Any], int]:
        return [], 0

    async def forget_user(self, user_id: str, at: Any) -> dict[str, Any]:
        return {"forgotten_at": at.isoformat(), "documents": 1, "chunks": 3, "files": 1}


class Runs:
    """The harness's run store, without PostgreSQL."""

    async def forget_user(self, user_id: str) -> int:
        return 2


@pytest.fixture(scope="module")
async def rag_url() -> AsyncIterator[str]:
    """The rag app as `create_app` builds it (with the credential), its engines stubbed."""
    app = rag_app(RagSettings(weir_service_token=SECRET))
    app.state.knowledge = Knowledge()
    async with serve_on_loopback(app) as url:
        yield url


async def test_the_gateway_reads_rag_with_the_credential(rag_url: str) -> None:
    app = gateway_app(GatewaySettings(weir_rag_url=rag_url, weir_service_token=SECRET))
    rag: InternalClient = app.state.rag
    without = InternalClient("the knowledge base", rag_url)
    try:
        page = await rag.request("GET", "/internal/documents", params={"user_id": "u1"})
        assert page == {"items": [], "total": 0, "offset": 0, "limit": 10}
        with pytest.raises(HTTPException) as refused:
            await without.request("GET", "/internal/documents")
        assert refused.value.status_code == 401
    finally:
        await rag.close()
        await without.close()


async def test_the_gateway_forgets_documents_in_rag_with_the_credential(
    rag_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEIR_RAG_URL", rag_url)
    at = "2026-01-01T12:00:00+00:00"
    app = FastAPI()
    for token, expected in ((SECRET.get_secret_value(), 200), ("", 401)):
        monkeypatch.setenv("WEIR_SERVICE_TOKEN", token)
        async with memory_api._lifespan(app):
            code, answer = await _answer(
                app.state.forget_documents, "DELETE", "/internal/users/u1/documents",
                params={"forgotten_at": at},
            )  # fmt: skip
        assert code == expected, answer
    monkeypatch.setenv("WEIR_SERVICE_TOKEN", SECRET.get_secret_value())
    async with memory_api._lifespan(app):
        _, answer = await _answer(
            app.state.forget_documents, "DELETE", "/internal/users/u1/documents",
            params={"forgotten_at": at},
        )  # fmt: skip
    assert answer == {"user_id": "u1", "forgotten_at": at, "documents": 1, "chunks": 3,
                      "files": 1}  # fmt: skip


@pytest.mark.parametrize(("token", "answer"), [(SECRET, "[1] manual.pdf\nabout backups"),
                                               (None, "HTTP 401 from 127.0.0.1")])  # fmt: skip
async def test_knowledge_search_calls_rag_with_the_credential(
    rag_url: str, token: SecretStr | None, answer: str
) -> None:
    settings = ToolsSettings(weir_rag_url=rag_url, weir_service_token=token or SecretStr(""))
    async with httpx.AsyncClient() as client:
        (knowledge,) = [
            b for b in http_builtins(settings, client) if b.info.name == "knowledge_search"
        ]
        outcome = await knowledge.run({"query": "backups"}, CallContext(timeout_s=5))
    assert answer in outcome.content


@pytest.fixture(scope="module")
async def memory_and_harness() -> AsyncIterator[tuple[str, str]]:
    """The memory app as `create_app` builds it (long-term memory not opened) and the
    harness's guarded router over a stub store, both with the credential."""
    memory = memory_app(MemorySettings(weir_service_token=SECRET))
    harness = FastAPI()
    harness.include_router(harness_router(cast(RunRepository, Runs()), SECRET))
    async with serve_on_loopback(memory) as memory_url, serve_on_loopback(harness) as runs_url:
        yield memory_url, runs_url


async def _answer(client: InternalClient, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    try:
        return 200, await client.request(method, path, **kwargs)
    except HTTPException as exc:
        return exc.status_code, exc.detail


async def test_the_gateway_reaches_memory_and_the_harness_with_the_credential(
    memory_and_harness: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_url, runs_url = memory_and_harness
    monkeypatch.setenv("WEIR_MEMORY_URL", memory_url)
    monkeypatch.setenv("WEIR_HARNESS_URL", runs_url)
    app = FastAPI()
    monkeypatch.setenv("WEIR_SERVICE_TOKEN", SECRET.get_secret_value())
    async with memory_api._lifespan(app):
        forgotten = await _answer(app.state.runs, "DELETE", "/users/u1/runs")
        # past the guard, the memory service answers for itself
        profile = await _answer(app.state.memory, "GET", "/memory/profile/u1")
    assert forgotten == (200, {"user_id": "u1", "runs_deleted": 2})
    assert profile == (503, "long-term memory is off")
    monkeypatch.setenv("WEIR_SERVICE_TOKEN", "")
    async with memory_api._lifespan(app):
        forgotten = await _answer(app.state.runs, "DELETE", "/users/u1/runs")
        profile = await _answer(app.state.memory, "GET", "/memory/profile/u1")
    assert forgotten == (401, "service credential missing")
    assert profile == (401, "service credential missing")
