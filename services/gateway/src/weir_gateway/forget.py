""" "Forget me" at the edge: each service that holds something of a user deletes it, in turn.

1. memory records the tombstone and deletes profile, memories, vectors, sessions and the
   short-term conversations; its tombstone time is handed to the others;
2. the knowledge service records the same tombstone and deletes the user's private
   documents (records, chunks in both indexes, stored files no other document uses);
3. the tools service deletes the user's stored call results (replays) and markers;
4. the harness deletes the run records (requests, step payloads, unpublished outbox rows).

Memory goes first: its tombstone stops an in-flight turn from writing anything back while the
rest is deleted. Every step is idempotent, so when one fails (503 naming it) calling forget
again finishes the job. A service this deployment does not run (no URL configured: the
launcher and the manifests set every one) holds nothing, and is listed as `not_deployed`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import structlog
from fastapi import HTTPException, status
from starlette.datastructures import State

from weir_gateway.internal import InternalClient

log = structlog.get_logger(__name__)


async def _part(
    part: str, client: InternalClient, method: str, path: str, **kwargs: Any
) -> dict[str, Any] | None:
    """One owner's step (None: the service is not deployed); any failure becomes a 503 that
    names the part."""
    if not client.deployed:
        log.warning("forget.part_not_deployed", part=part)
        return None
    try:
        answer: dict[str, Any] = await client.request(method, path, **kwargs)
    except HTTPException as exc:
        log.warning("forget.part_failed", part=part, status=exc.status_code, detail=exc.detail)
        detail = f"forget me stopped at {part} ({exc.detail}); call it again to finish"
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail) from exc
    return answer


async def forget_user(state: State, user_id: str) -> dict[str, Any]:
    """Delete everything the product holds for `user_id`; what each part deleted."""
    seg = quote(user_id, safe="")
    memory = await _part("memory", state.memory, "DELETE", f"/memory/users/{seg}")
    at = {"forgotten_at": memory["forgotten_at"]} if memory else {}
    documents = await _part(
        "documents", state.forget_documents, "DELETE", f"/internal/users/{seg}/documents",
        params=at,
    )  # fmt: skip
    tools = await _part(
        "tool results", state.forget_tools, "DELETE", f"/internal/users/{seg}/calls"
    )
    runs = await _part("runs", state.runs, "DELETE", f"/users/{seg}/runs")
    parts = {"memory": memory, "documents": documents, "tool results": tools, "runs": runs}
    docs = {k: documents[k] for k in ("documents", "chunks", "files")} if documents else None
    log.info("forget.done", user_id=user_id, forgotten_at=at.get("forgotten_at"))
    return {
        "user_id": user_id,
        "forgotten_at": at.get("forgotten_at"),
        "deleted": memory["deleted"] if memory else {},
        "documents": docs,
        "tool_calls_deleted": tools["calls_deleted"] if tools else None,
        "runs_deleted": runs["runs_deleted"] if runs else None,
        "not_deployed": [name for name, answer in parts.items() if answer is None],
    }
