"""The product under chaos: its own engines (Apache Kafka) on a temporary data folder, every
service supervised, the scripted model, and the logged MCP peer; short deadlines."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import structlog

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.base import free_port
from weir_deploy.services import DEFAULT_SERVICES, LOOPBACK_PROXY_AUTH, Services
from weir_deploy.stack import ALL_ENGINES, Stack

from .audit import Audit, audit_load
from .driver import DOC_NAME, DOC_TEXT, TOOL_ANSWER, Chaos, Ledger, Message, Plan, run_load

log = structlog.get_logger(__name__)
PEER = Path(__file__).parent / "peers" / "notes_server.py"
RESENDS = 4  # note rules are scripted for this many sends of one message

#: Deadlines short enough that a lost step is retried within seconds, long enough that a
#: restarting service (a few seconds on 2 loaded cores) is not given up on.
SHORT_DEADLINES = {
    "BACKOFF_BASE_S": "0.2",
    "STEP_TIMEOUT_S": "6",
    "GENERATE_TIMEOUT_S": "10",
    "TOOL_TIMEOUT_S": "5",
    "MAX_ATTEMPTS": "8",
    "RUN_DEADLINE_S": "150",
}


def mcp_servers(notes_log: Path) -> str:
    """`MCP_SERVERS`: the time server (single tool) and the logged notes peer (ReAct)."""
    return json.dumps(
        [
            {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"]},
            {
                "name": "notes",
                "command": sys.executable,
                "args": [str(PEER)],
                "env": {"CHAOS_NOTES_LOG": str(notes_log)},
            },
        ]
    )


def script(messages: Iterable[Message]) -> list[ScriptRule]:
    """The model's behaviour: Tokyo → the time tool; each note → one `append_note` call,
    for every send of the message (a resend has a new id), then a text answer."""
    tokyo = ScriptToolCall(name="get_current_time", arguments={"timezone": "Asia/Tokyo"})
    rules = [
        ScriptRule(match="Tokyo", tool_calls=[tokyo], with_tools=True),
        ScriptRule(match="Tokyo", text=TOOL_ANSWER),
        ScriptRule(match="Quillfeather", text="Couriers sign the ledger twice [1]."),
    ]
    for message in messages:
        if message.route != "react":
            continue
        stem = message.mid.rsplit("r", 1)[0]
        for attempt in range(RESENDS):
            mid = f"{stem}r{attempt}"
            call = ScriptToolCall(name="append_note", arguments={"text": mid})
            rules.append(ScriptRule(match=f"note {mid}\\b", tool_calls=[call], once=True,
                                    with_tools=True))  # fmt: skip
            rules.append(ScriptRule(match=f"note {mid}\\b", text=f"Noted {mid}."))
    return rules


@dataclass
class Product:
    """Engines, supervised services, the scripted model and where the peer logs."""

    stack: Stack
    services: Services
    llm: ScriptedLLM
    notes_log: Path
    restarts: dict[str, float] = field(default_factory=dict)

    @property
    def ws_url(self) -> str:
        """The chat socket."""
        return self.services.url("gateway").replace("http", "ws") + "/ws/chat"

    @property
    def database_url(self) -> str:
        """PostgreSQL of the product (runs and memory)."""
        return self.stack.env()["DATABASE_URL"]

    async def upload_doc(self) -> dict[str, Any]:
        """Upload the shared document the rag route answers from."""
        headers = {"X-User-Id": "chaos-admin", "X-User-Role": "admin"}
        files = [("files", (DOC_NAME, DOC_TEXT.encode(), "text/markdown"))]
        async with httpx.AsyncClient(base_url=self.services.url("gateway"), timeout=120) as http:
            response = await http.post(
                "/api/knowledge/upload",
                params={"wait": "true"},
                files=files,
                data={"shared": "true"},
                headers=headers,
            )
        response.raise_for_status()
        [document] = response.json()["documents"]
        assert document["status"] in ("ingested", "unchanged", "replaced"), document
        return dict(document)

    async def restart_all(self) -> None:
        """Stop every service and engine, then start them again on the same data."""
        began = time.monotonic()
        await self.services.stop()
        await self.stack.stop()
        await self.stack.start()
        await self.services.start()
        self.restarts["stack"] = round(time.monotonic() - began, 2)


@asynccontextmanager
async def product(work: Path | None = None) -> AsyncIterator[Product]:
    """Start the whole product on a fresh temporary folder; remove it after a clean run."""
    root = work or Path(tempfile.mkdtemp(prefix="weir-chaos-"))
    notes_log = root / "notes.log"
    notes_log.touch()
    # an explicit data_dir: `stack.stop()` keeps it, so the stack can start again on it
    stack = Stack(ALL_ENGINES, ephemeral=True, data_dir=root, kafka_impl="apache")
    env = {
        **SHORT_DEADLINES,
        **LOOPBACK_PROXY_AUTH,
        "TOPIC_PREFIX": f"chaos{new_id()[:6]}.",
        "LLM_MODEL": "openai/scripted",
        "LLM_API_KEY": "sk-scripted",
        "MCP_SERVERS": mcp_servers(notes_log),
        # `append_note` is not read-only, so it would wait for each user's approval; these
        # clients pipeline messages and approve nothing: this tier measures delivery under
        # kills (a parked run surviving a restart: harness tests/test_confirmation.py)
        "TOOLS_NO_CONFIRM": '["append_note"]',
    }
    async with ScriptedLLM() as llm, stack:
        env["LLM_API_BASE"] = llm.base_url
        services = Services(
            stack.env(),
            root / "logs" / "services",
            names=DEFAULT_SERVICES,
            gateway_port=free_port(),
            extra_env=env,
            supervise=True,
        )
        async with services:
            yield Product(stack, services, llm, notes_log)
    if os.environ.get("WEIR_KEEP_DATA"):  # the services' logs, to read after a failure
        log.info("chaos.kept", folder=str(root))
    else:
        shutil.rmtree(root, ignore_errors=True)


async def load_and_audit(
    running: Product, plan: Plan, chaos: Chaos | None = None, settle_s: float = 90.0
) -> tuple[Ledger, Audit]:
    """Script the model for `plan`, send it under `chaos`, and audit what it left behind."""
    running.llm.set_script(script(plan.messages()))
    ledger = await run_load(running.ws_url, plan, chaos=chaos, settle_s=settle_s)
    users = [plan.user(i) for i in range(plan.clients)]
    audit = await audit_load(
        ledger, database_url=running.database_url, notes_log=running.notes_log, users=users
    )
    return ledger, audit
