"""A terminal chat client: `weir chat` (or `python -m weir_gateway.client`, `make chat`).

Type a message and press Enter; the answer streams in as it is generated. `/new` starts a
new conversation, `/private` toggles private mode, `/quit` (or Ctrl-D) leaves. Against a
gateway in `token` mode, pass `--token` or set `WEIR_TOKEN` (sent as a bearer header).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import websockets

from weir_common.events import new_id

HELP = "commands: /new (new conversation), /private (toggle private mode), /quit"


async def _read_line(prompt: str) -> str | None:
    print(prompt, end="", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    return line.rstrip("\n") if line else None


async def _answer(ws: websockets.ClientConnection) -> None:
    """Print frames of the current turn until it is done."""
    while True:
        frame: dict[str, Any] = json.loads(await ws.recv())
        kind = frame["type"]
        if kind == "delta":
            print(frame["text"], end="", flush=True)
        elif kind == "reset":
            print("\n[retrying]", flush=True)
        elif kind == "confirm":
            await _confirm(ws, frame)
        elif kind == "done":
            label = " [offline]" if frame.get("offline") else ""
            print(f"\n[{frame.get('route')}{label}]\n", flush=True)
            return
        elif kind == "error":
            print(f"\n[error {frame['code']}] {frame['message']}\n", flush=True)
            return


async def _confirm(ws: websockets.ClientConnection, frame: dict[str, Any]) -> None:
    """Ask whether the tool call the run waits for may run, and send the answer."""
    arguments = json.dumps(frame.get("arguments") or {}, ensure_ascii=False)
    print(f"\n[confirm] run {frame['tool']}({arguments})?", flush=True)
    line = await _read_line("approve? [y/N] ")
    approve = (line or "").strip().lower() in ("y", "yes")
    answer = {"type": "confirm", "run_id": frame["run_id"], "call_id": frame["call_id"],
              "approve": approve}  # fmt: skip
    await ws.send(json.dumps(answer))
    print("weir> ", end="", flush=True)


async def chat(url: str, token: str | None) -> None:
    """Talk to the gateway at `url` (with bearer `token`, if any) until the input ends."""
    conversation, private = new_id()[:12], False
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with websockets.connect(url, additional_headers=headers) as ws:
        ready = json.loads(await ws.recv())
        print(f"connected as {ready['user_id']}; {HELP}")
        while (line := await _read_line("you> ")) is not None:
            if line in ("/quit", "/exit"):
                break
            if line == "/new":
                conversation = new_id()[:12]
                print("(new conversation)")
                continue
            if line == "/private":
                private = not private
                print(f"(private mode {'on' if private else 'off'})")
                continue
            if not line.strip():
                continue
            frame = {
                "type": "chat",
                "text": line,
                "conversation_id": conversation,
                "private": private,
            }
            await ws.send(json.dumps(frame))
            print("weir> ", end="", flush=True)
            await _answer(ws)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments (`argv`, else the command line's) and chat."""
    parser = argparse.ArgumentParser(description="Chat with weir from the terminal.")
    parser.add_argument("--url", default="ws://127.0.0.1:8000/ws/chat")
    parser.add_argument(
        "--token", default=os.environ.get("WEIR_TOKEN"), help="Bearer token (or WEIR_TOKEN)."
    )
    args = parser.parse_args(argv)
    try:
        asyncio.run(chat(args.url, args.token))
    except (OSError, websockets.InvalidURI, websockets.InvalidHandshake) as exc:
        print(f"cannot reach weir at {args.url}: {exc} (is `make run` running?)", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
