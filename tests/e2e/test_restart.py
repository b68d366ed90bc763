"""The second day (issue 10): the whole product — engines and services — is stopped and
started again on its own data folder, as a second `make run` does; what the first run stored
is served. Then Milvus alone restarts under the running services. Offline responder: the
answer quotes the memories and passages it was given, so recall shows in the text."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from weir_common.events import new_id
from weir_deploy.base import free_port
from weir_deploy.services import LOOPBACK_PROXY_AUTH, Services
from weir_deploy.stack import ALL_ENGINES, Stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.xdist_group("own"),
]

PDF = Path(__file__).parents[1] / "data" / "pdfs" / "scotus-transcript-p1.pdf"
USER = f"u-{new_id()[:6]}"


class Product:
    """Engines on one data folder and the six services, restartable as a whole."""

    def __init__(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="weir-e2e-restart-"))
        self.stack = Stack(
            ALL_ENGINES, ephemeral=True, durable=True, data_dir=self.data, kafka_impl="apache"
        )
        self.gateway_port = free_port()
        self.services: Services | None = None

    async def start(self) -> None:
        await self.stack.start()
        self.services = Services(
            self.stack.env(),
            self.data / "logs",
            gateway_port=self.gateway_port,
            # quicker retries than the default (3 tries 0.5 s, 1 s apart) over a longer span
            extra_env={**LOOPBACK_PROXY_AUTH, "BACKOFF_BASE_S": "0.2", "MAX_ATTEMPTS": "5"},
            supervise=True,
        )
        await self.services.start()

    async def stop(self) -> None:
        if self.services is not None:
            await self.services.stop()
        await self.stack.stop()

    async def turn(self, text: str) -> dict[str, Any]:
        url = f"ws://127.0.0.1:{self.gateway_port}/ws/chat"
        async with websockets.connect(url, additional_headers={"X-User-Id": USER}) as ws:
            await ws.recv()  # ready
            await ws.send(json.dumps({"type": "chat", "text": text, "conversation_id": "c1"}))
            while True:
                frame: dict[str, Any] = json.loads(await ws.recv())
                if frame["type"] in ("done", "error") and frame.get("run_id"):
                    return frame


@pytest.fixture(scope="module")
async def product(request: pytest.FixtureRequest) -> AsyncIterator[Product]:
    running = Product()
    failed_before = request.session.testsfailed
    await running.start()
    try:
        yield running
    finally:
        await running.stop()
        if request.session.testsfailed == failed_before:  # else keep the logs
            shutil.rmtree(running.data, ignore_errors=True)


async def _remembered(product: Product, needle: str) -> bool:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{product.gateway_port}") as http:
        response = await http.get(f"/api/memory/items/{USER}", headers={"X-User-Id": USER})
    return needle in response.text


async def test_a_second_start_on_the_same_data_serves_what_the_first_stored(
    product: Product,
) -> None:
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{product.gateway_port}", timeout=180
    ) as http:
        upload = await http.post(
            "/api/knowledge/upload",
            params={"wait": "true"},
            files=[("files", (PDF.name, PDF.read_bytes(), "application/pdf"))],
            headers={"X-User-Id": USER},
        )
    assert upload.status_code == 202, upload.text
    first = await product.turn("Hi, my name is Zorro and I love sailing on the Baltic")
    assert first["type"] == "done", first
    for _ in range(100):  # the turn is recorded in memory after `done`
        if await _remembered(product, "sailing"):
            break
        await product.turn("ok")
    assert await _remembered(product, "sailing")

    await product.stop()
    await product.start()

    again = await product.turn("What do I love?")
    assert again["type"] == "done", again
    assert "sailing" in again["text"]
    cited = await product.turn("Who argued on behalf of the Petitioner in Knowles v. Mirzayance?")
    assert cited["type"] == "done", cited
    assert cited["route"] == "rag"
    assert "scotus-transcript-p1.pdf" in cited["text"]


async def test_a_milvus_restart_under_running_services_is_survived(product: Product) -> None:
    milvus = product.stack.engine("milvus")
    await milvus.stop()
    await milvus.start()
    again = await product.turn("Do you remember what I love?")
    assert again["type"] == "done", again
    assert "sailing" in again["text"]
    cited = await product.turn("Who argued on behalf of the Petitioner in Knowles v. Mirzayance?")
    assert cited["type"] == "done", cited
    assert "scotus-transcript-p1.pdf" in cited["text"]
