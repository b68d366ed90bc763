"""The web UI (F45): one page at `/`, its scripts and styles under `/static/`.

Everything the page needs is served from the package folder `webui/` (plain ES modules, no
build step; `marked` and `DOMPurify` are vendored in `webui/vendor/`), so a browser needs no
other network than this gateway.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

WEB_DIR = Path(__file__).parent / "webui"

# What the page allows itself: its own scripts, styles, API and socket; nothing else.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'{sockets}; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HOST = re.compile(r"[A-Za-z0-9.:\[\]-]{1,255}")

# ES modules are refused with any other type; some systems' mime tables lack `.mjs`
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/javascript", ".mjs")


def content_security_policy(host: str | None) -> str:
    """The page's policy; the chat socket's own origin is named too, for browsers whose
    `'self'` does not cover `ws:` / `wss:`."""
    sockets = f" ws://{host} wss://{host}" if host and HOST.fullmatch(host) else ""
    return CONTENT_SECURITY_POLICY.format(sockets=sockets)


def mount_web(app: FastAPI) -> None:
    """Serve the page at `GET /` and its assets at `/static/...` (API routes keep theirs)."""

    @app.get("/", include_in_schema=False)
    async def index(request: Request) -> FileResponse:
        return FileResponse(
            WEB_DIR / "index.html",
            media_type="text/html; charset=utf-8",
            headers={
                "Cache-Control": "no-cache",
                "Content-Security-Policy": content_security_policy(request.headers.get("host")),
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
