"""The gateway's internal client over real HTTP on loopback: a service's own refusal passes
through in its words; a crash's raw text never reaches the client."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.responses import PlainTextResponse

from weir_common.testing.loopback import serve_on_loopback
from weir_gateway.internal import InternalClient

pytestmark = pytest.mark.unit


def _service() -> FastAPI:
    app = FastAPI()

    @app.get("/refused")
    async def refused() -> None:
        raise HTTPException(404, "no document d1 of yours")

    @app.get("/crash")
    async def crash() -> None:
        raise RuntimeError("MilvusException: collection weir_rag_384 at 10.0.0.7 released")

    @app.get("/odd")
    async def odd() -> PlainTextResponse:
        return PlainTextResponse("psycopg: password authentication failed", status_code=502)

    return app


async def test_refusals_pass_through_and_crashes_are_told_in_weirs_words() -> None:
    async with serve_on_loopback(_service()) as url:
        client = InternalClient("the knowledge base", url)
        try:
            with pytest.raises(HTTPException) as refused:
                await client.request("GET", "/refused")
            assert (refused.value.status_code, refused.value.detail) == (
                404,
                "no document d1 of yours",
            )
            for path, code in (("/crash", 500), ("/odd", 502)):
                with pytest.raises(HTTPException) as failed:
                    await client.request("GET", path)
                assert failed.value.status_code == code
                assert failed.value.detail == (
                    f"the knowledge base failed (HTTP {code}); try again later"
                )
        finally:
            await client.close()
