"""Knowledge end to end: upload a real PDF over HTTP, ask about it over WebSocket, get an
answer that cites it; bad PDFs end in a clear failure; private documents stay private."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import ChatClient, messages_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PDFS = Path(__file__).parents[1] / "data" / "pdfs"
QUESTION = "Who argued on behalf of the Petitioner in Knowles v. Mirzayance?"


async def _upload(product: Services, user: str, *names: str) -> list[dict[str, Any]]:
    files = [("files", (n, (PDFS / n).read_bytes(), "application/pdf")) for n in names]
    async with httpx.AsyncClient(base_url=product.url("gateway"), timeout=180) as http:
        response = await http.post(
            "/api/knowledge/upload",
            params={"wait": "true"},
            files=files,
            headers={"X-User-Id": user},
        )
    assert response.status_code == 202, response.text
    documents: list[dict[str, Any]] = response.json()["documents"]
    return documents


async def test_a_pdf_uploaded_over_http_is_cited_in_the_answer(
    chat: ChatClient, product: Services, llm: ScriptedLLM
) -> None:
    user = chat.frames[0]["user_id"]
    [doc] = await _upload(product, str(user), "scotus-transcript-p1.pdf")
    assert doc["status"] in ("ingested", "unchanged", "replaced"), doc
    assert doc["chunks"] > 0
    llm.set_script(
        [ScriptRule(match="Knowles", text="Steven E. Mercer argued for the petitioner [1].")]
    )
    frames = await chat.turn(QUESTION)
    retrieval = [f for f in frames if f["type"] == "step" and f["kind"] == "retrieval"]
    assert retrieval
    assert "scotus-transcript-p1.pdf" in retrieval[0]["content"]
    assert frames[-1]["type"] == "done"
    assert frames[-1]["route"] == "rag"
    fenced = str(messages_for(llm, QUESTION)[-1]["content"])  # passages: user role, fenced
    assert "<evidence>" in fenced
    assert "(scotus-transcript-p1.pdf" in fenced
    assert "MERCER" in fenced.upper()

    # the control bar's switch: the same question with the knowledge base off for this turn
    frames = await chat.turn(QUESTION, knowledge=False)
    assert not [f for f in frames if f["type"] == "step" and f["kind"] == "retrieval"]
    assert frames[-1]["type"] == "done", frames[-1]
    said = json.dumps(messages_for(llm, QUESTION), ensure_ascii=False)
    assert "the user turned the knowledge base off" in said
    assert "<evidence>" not in str(messages_for(llm, QUESTION)[-1]["content"])

    async with httpx.AsyncClient(base_url=product.url("gateway"), timeout=30) as http:
        listed = (
            await http.get("/api/knowledge/documents", headers={"X-User-Id": str(user)})
        ).json()
        chunks = await http.get(
            f"/api/knowledge/documents/{doc['document_id']}/chunks",
            headers={"X-User-Id": str(user)},
        )
        stranger = await http.get(
            f"/api/knowledge/documents/{doc['document_id']}/chunks", headers={"X-User-Id": "eve"}
        )
        path = f"/api/knowledge/documents/{doc['document_id']}"
        not_theirs = await http.delete(path, headers={"X-User-Id": "eve"})
        deleted = await http.delete(path, headers={"X-User-Id": str(user)})
        after = await http.get("/api/knowledge/documents", headers={"X-User-Id": str(user)})
    assert any(d["document_id"] == doc["document_id"] for d in listed["items"])
    assert len(chunks.json()["items"]) == doc["chunks"]
    assert stranger.status_code == 404
    assert not_theirs.status_code == 404  # another user's private document does not exist
    assert deleted.status_code == 200, deleted.text  # an owner deletes their own
    assert all(d["document_id"] != doc["document_id"] for d in after.json()["items"])


async def test_another_users_private_document_is_never_retrieved(
    product: Services, llm: ScriptedLLM
) -> None:
    await _upload(product, "alice", "scotus-transcript-p1.pdf")
    llm.set_script([ScriptRule(match="Knowles", text="I do not know.")])
    url = product.url("gateway").replace("http", "ws") + "/ws/chat"
    async with websockets.connect(url, additional_headers={"X-User-Id": "bob"}) as ws:
        bob = ChatClient(ws)
        await bob.recv()
        frames = await bob.turn(QUESTION)
    assert frames[-1]["type"] == "done"
    fenced = str(messages_for(llm, QUESTION)[-1]["content"])
    assert "scotus-transcript-p1.pdf" not in fenced
    assert "MERCER" not in fenced.upper()


async def test_bad_pdfs_fail_with_a_clear_reason(product: Services) -> None:
    docs = await _upload(
        product, "carol", "empty.pdf", "malformed-from-issue-932.pdf", "password-example.pdf"
    )
    reasons = {d["source"]: d for d in docs}
    assert all(d["status"] == "failed" for d in docs), json.dumps(docs)
    assert "empty" in reasons["empty.pdf"]["reason"]
    assert "encrypted" in reasons["password-example.pdf"]["reason"]
    assert "damaged" in reasons["malformed-from-issue-932.pdf"]["reason"]


async def test_only_admins_create_collections(product: Services) -> None:
    files = [("files", ("note.txt", b"Quillfeather couriers sign the ledger twice.", "text/plain"))]
    name, carol = f"team-{new_id()[:6]}", {"X-User-Id": "carol"}
    admin = {"X-User-Id": "ops", "X-User-Role": "admin"}
    async with httpx.AsyncClient(base_url=product.url("gateway"), timeout=180) as http:
        upload = "/api/knowledge/upload"
        refused = await http.post(upload, files=files, data={"collection": name}, headers=carol)
        created = await http.post(
            upload, files=files, data={"collection": name}, params={"wait": "true"}, headers=admin
        )
        joined = await http.post(upload, files=files, data={"collection": name}, headers=carol)
    assert refused.status_code == 403, refused.text
    assert refused.json()["detail"] == "only admins create collections"
    assert created.status_code == 202, created.text
    assert created.json()["documents"][0]["status"] == "ingested", created.text
    assert joined.status_code == 202, joined.text
