"""A real MCP peer for the chaos tier: `append_note(text)` appends one line per call.

Run over stdio (``python tests/chaos/peers/notes_server.py``). Every call appends a JSON line
``{"text": ..., "pid": ...}`` to the file named by ``CHAOS_NOTES_LOG``, so a test can count
the side effects of each unique argument. The tool declares itself not idempotent, so the
tools service must never repeat a call whose outcome it does not know.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

LOG_VARIABLE = "CHAOS_NOTES_LOG"

server = MCPServer("notes")


@server.tool(
    description="Append a note to the team's notebook (each call adds one line).",
    annotations=ToolAnnotations(
        idempotent_hint=False, destructive_hint=False, read_only_hint=False
    ),
)
def append_note(text: str) -> str:
    """Append `text` as one line of the log; a second call appends a second line."""
    line = json.dumps({"text": text, "pid": os.getpid()}, ensure_ascii=False) + "\n"
    # one write() on an O_APPEND descriptor: lines of concurrent writers never interleave
    fd = os.open(os.environ[LOG_VARIABLE], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return f"noted: {text}"


if __name__ == "__main__":
    server.run("stdio")
