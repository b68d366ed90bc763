"""A scripted OpenAI-compatible server for tests (real HTTP on 127.0.0.1).

In-process::

    async with ScriptedLLM(rules=[ScriptRule(match="weather", text="It is sunny")]) as llm:
        ...  # point litellm at llm.base_url with model "openai/scripted"

As a separate process::

    python -m weir_common.testing.scripted_llm --port 8099 --script rules.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from weir_common.quiet_server import listening_socket
from weir_common.testing.openai_wire import sse_stream, whole_completion
from weir_common.testing.script import (
    ScriptRule,
    ScriptState,
    encode_embedding,
    hash_embedding,
    last_user_message,
    parse_script,
)


def create_app(state: ScriptState | None = None) -> FastAPI:
    """The FastAPI app; all state lives in ``state`` (one per app)."""
    st = state if state is not None else ScriptState()
    app = FastAPI(title="weir scripted LLM")

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        st.record("/v1/chat/completions", body)
        st.chat_count += 1
        rule, fail = st.pick(last_user_message(body), bool(body.get("tools")))
        if fail and rule is not None:
            err = {
                "message": f"scripted failure ({rule.status})",
                "type": "scripted_error",
                "code": rule.status,
            }
            return JSONResponse({"error": err}, status_code=rule.status)
        if body.get("stream"):
            return StreamingResponse(sse_stream(body, rule), media_type="text/event-stream")
        return JSONResponse(await whole_completion(body, rule))

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> Response:
        body = await request.json()
        st.record("/v1/embeddings", body)
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        dim = int(body.get("dimensions") or 64)
        fmt = body.get("encoding_format")
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": encode_embedding(hash_embedding(t, dim), fmt),
            }
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model", "scripted")),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "weir"}],
        }

    @app.get("/_requests")
    async def requests() -> list[dict[str, Any]]:
        return st.recorded

    @app.post("/_script")
    async def script(request: Request) -> dict[str, int]:
        st.set_script(parse_script(await request.json()))
        return {"rules": len(st.rules)}

    @app.post("/_reset")
    async def reset() -> dict[str, bool]:
        st.reset()
        return {"ok": True}

    return app


class _InProcessServer(uvicorn.Server):
    """uvicorn without signal capture: it runs as a task on someone else's loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ScriptedLLM:
    """Async context manager running the scripted server on a free loopback port."""

    def __init__(self, rules: list[ScriptRule] | None = None, host: str = "127.0.0.1") -> None:
        self.state = ScriptState()
        self.state.set_script(list(rules or []))
        self._host = host
        self._server: _InProcessServer | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def recorded(self) -> list[dict[str, Any]]:
        """Every request as ``{"path", "body"}``, in order."""
        return list(self.state.recorded)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of every chat-completion request, in order."""
        return [r["body"] for r in self.state.recorded if r["path"] == "/v1/chat/completions"]

    def set_script(self, rules: list[ScriptRule]) -> None:
        """Replace the script."""
        self.state.set_script(rules)

    def reset(self) -> None:
        """Forget script, requests and counters."""
        self.state.reset()

    async def __aenter__(self) -> ScriptedLLM:
        sock = listening_socket(self._host, 0)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            create_app(self.state),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = _InProcessServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("scripted LLM server stopped during start-up")
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task


def main(argv: list[str] | None = None) -> None:
    """CLI: serve the scripted LLM on ``--port`` until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--script", type=Path, help="JSON file: [rule, ...] or {rules: [...]}")
    args = parser.parse_args(argv)
    state = ScriptState()
    if args.script:
        state.set_script(parse_script(json.loads(args.script.read_text(encoding="utf-8"))))
    uvicorn.run(create_app(state), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
