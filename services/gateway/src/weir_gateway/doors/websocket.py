"""The WebSocket door (`/ws/chat`): client frames in, the run's frames out as they are.

The frame format both ways is in `weir_gateway.frames`; the frames of a run are the neutral
ones of `weir_gateway.stream`, each sent with `seq`, its position on this connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Coroutine
from typing import Any

import structlog
from fastapi import HTTPException, WebSocket, WebSocketDisconnect
from faststream.kafka import KafkaBroker
from pydantic import ValidationError

from weir_common.bus import KafkaCredentials
from weir_common.events import new_id
from weir_gateway.auth import Principal
from weir_gateway.confirm_api import ConfirmBody, ConfirmError, confirm_frame, give_confirmation
from weir_gateway.frames import (
    CLIENT_FRAME,
    CLIENT_FRAME_TYPES,
    ChatFrame,
    ConfirmFrame,
    ResumeFrame,
)
from weir_gateway.internal import InternalClient
from weir_gateway.quotas import QuotaExceededError, Quotas
from weir_gateway.runs_api import answer_of, find_record, look_up, reply_source
from weir_gateway.service import ChatStart, ReplyHub, start_chat
from weir_gateway.settings import GatewaySettings
from weir_gateway.stream import Frame, RunStream
from weir_gateway.tail import ReplySource, tail_run

log = structlog.get_logger(__name__)

DROPPED: dict[str, str] = {}
"""Frame kinds this door does not send, with why: none, the WebSocket carries every frame."""


def encode(frame: Frame, seq: int) -> Frame | None:
    """A frame as the WebSocket sends it: itself, with its position on the connection."""
    return {**frame, "seq": seq}


class ChatConnection:
    """One client on `/ws/chat`: reads frames, publishes requests, writes replies in order."""

    def __init__(
        self,
        ws: WebSocket,
        user_id: str,
        *,
        hub: ReplyHub,
        broker: KafkaBroker,
        settings: GatewaySettings,
        runs: InternalClient,
        quotas: Quotas,
    ) -> None:
        self._ws, self._user, self._hub = ws, user_id, hub
        self._broker, self._settings, self._runs = broker, settings, runs
        self._quotas = quotas
        self._outbox: asyncio.Queue[Frame] = asyncio.Queue()
        self._seq = 0
        self._conversation = new_id()
        self._watchers: set[asyncio.Task[None]] = set()

    async def serve(self) -> None:
        """Run the connection until the client leaves."""
        await self._ws.accept()
        self._hub.connect(self._user, self._outbox)
        writer = asyncio.create_task(self._write_loop())
        self._outbox.put_nowait(
            {"type": "ready", "user_id": self._user, "conversation_id": self._conversation}
        )
        try:
            while True:
                text = await self._ws.receive_text()
                try:
                    await self._on_text(text)
                except Exception:  # one frame's failure is not the connection's
                    log.exception("ws.frame_failed", user_id=self._user)
                    self._error("internal", "this frame could not be handled; try again")
        except WebSocketDisconnect:
            pass
        finally:
            self._hub.forget(self._outbox)
            for task in self._watchers:
                task.cancel()
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    async def _write_loop(self) -> None:
        while True:
            frame = await self._outbox.get()
            await self._ws.send_json(encode(frame, self._seq))
            self._seq += 1

    def _error(self, code: str, message: str, run_id: str | None = None) -> None:
        frame: Frame = {"type": "error", "code": code, "message": message}
        if run_id is not None:
            frame["run_id"] = run_id
        self._outbox.put_nowait(frame)

    async def _on_text(self, text: str) -> None:
        if len(text.encode()) > self._settings.max_frame_bytes:
            self._error("too_large", f"frame exceeds {self._settings.max_frame_bytes} bytes")
            return
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            self._error("bad_json", f"frame is not JSON: {exc.msg}")
            return
        if not isinstance(raw, dict) or raw.get("type") not in CLIENT_FRAME_TYPES:
            kind = raw.get("type") if isinstance(raw, dict) else type(raw).__name__
            self._error(
                "unknown_type",
                f"unknown frame type {kind!r}; expected chat, resume, confirm or ping",
            )
            return
        try:
            frame = CLIENT_FRAME.validate_python(raw)
        except ValidationError as exc:
            self._error("invalid", _first_error(exc))
            return
        if isinstance(frame, ChatFrame):
            await self._on_chat(frame)
        elif isinstance(frame, ResumeFrame):
            self._spawn(self._on_resume(frame))  # may wait for the run to be recorded
        elif isinstance(frame, ConfirmFrame):
            self._spawn(self._on_confirm(frame))
        else:
            self._outbox.put_nowait({"type": "pong"})

    async def _on_chat(self, frame: ChatFrame) -> None:
        if len(frame.text) > self._settings.max_message_chars:
            self._error("too_large", f"message exceeds {self._settings.max_message_chars} chars")
            return
        self._conversation = frame.conversation_id or self._conversation
        stream = RunStream(new_id(), self._conversation, frame.id)
        try:
            await start_chat(
                ChatStart(
                    self._user, frame.text, stream, frame.private, frame.knowledge, frame.tools
                ),
                self._outbox,
                hub=self._hub,
                broker=self._broker,
                settings=self._settings,
                quotas=self._quotas,
            )
        except QuotaExceededError as exc:
            self._outbox.put_nowait(
                {
                    "type": "error",
                    "code": exc.code,
                    "message": exc.reason,
                    "id": frame.id,
                    "retry_after": exc.retry_after_s,
                }
            )
            return
        self._outbox.put_nowait(
            {
                "type": "accepted",
                "run_id": stream.run_id,
                "conversation_id": self._conversation,
                "id": frame.id,
            }
        )

    async def _on_confirm(self, frame: ConfirmFrame) -> None:
        """Pass the user's answer for a waiting tool call on to the harness."""
        answer = ConfirmBody(call_id=frame.call_id, approve=frame.approve, remember=frame.remember)
        try:
            sent = await give_confirmation(self._runs, self._broker, self._settings,
                                           user_id=self._user, run_id=frame.run_id,
                                           answer=answer)  # fmt: skip
        except ConfirmError as exc:
            self._error(exc.code, exc.message, frame.run_id)
            return
        self._outbox.put_nowait({"type": "confirmed", **sent})

    async def _on_resume(self, frame: ResumeFrame) -> None:
        """Follow a run of a lost connection here: the pieces after the last one the client
        had (`after`, of generation `attempt`), the live rest, and one final frame."""
        try:
            run = await self._find(frame.run_id)
        except HTTPException as exc:
            message = f"cannot look the run up now: {exc.detail}"
            self._error("unavailable", message, frame.run_id)
            return
        if run is None:
            self._error("unknown_run", f"no run {frame.run_id} of yours", frame.run_id)
            return
        found = answer_of(run)
        conversation = frame.conversation_id or self._conversation
        after = -1 if frame.after is None else frame.after
        stream = RunStream(found.run_id, conversation, found.client_message_id,
                           attempt=frame.attempt, next_seq=after + 1)  # fmt: skip
        self._hub.expect(stream, self._outbox)
        self._outbox.put_nowait({"type": "resumed", "run_id": found.run_id,
                                 "status": found.status, **stream.ids()})  # fmt: skip
        waiting = confirm_frame(run)  # the card to show again: the run waits for the user
        if waiting is not None:
            self._outbox.put_nowait(waiting)
        final = found.final_frame(stream.ids())
        source = reply_source(run)
        # a finished run ends at once, unless the client has some pieces (`after`) of an
        # answer whose pieces can be read back: then it gets the rest of them first
        pieces_wanted = frame.after is not None and source is not None
        if final is not None and not (pieces_wanted and final["type"] == "done"):
            self._hub.finish(found.run_id, final)
            return
        tail = None
        if source is not None:
            bootstrap = self._settings.kafka_bootstrap_servers
            tail = self._spawn(self._tail(bootstrap, source, stream.run_id))
        self._spawn(self._watch(stream, tail))

    async def _tail(self, bootstrap: str, source: ReplySource, run_id: str) -> None:
        try:
            credentials = KafkaCredentials.of(self._settings)
            await tail_run(bootstrap, source, run_id, self._hub, credentials)
        except Exception as exc:  # the record's final frame still ends the run
            log.warning("resume.tail_failed", run_id=run_id, error=f"{type(exc).__name__}: {exc}")

    async def _find(self, run_id: str) -> dict[str, Any] | None:
        """The user's run record, waiting out a harness that is away (restarting) for up
        to `resume_wait_s`, and a run not recorded yet for `resume_grace_s`."""
        give_up = time.monotonic() + self._settings.resume_wait_s
        while True:
            try:
                return await find_record(
                    self._runs, run_id, Principal(self._user),
                    grace_s=self._settings.resume_grace_s,
                )  # fmt: skip
            except HTTPException as exc:
                if exc.status_code < 500 or time.monotonic() >= give_up:
                    raise
            await asyncio.sleep(self._settings.resume_poll_s)

    def _spawn(self, work: Coroutine[None, None, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(work)
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)
        return task

    async def _watch(self, stream: RunStream, tail: asyncio.Task[None] | None) -> None:
        """Poll the run's record until it ends, in case its replies cannot be read back. A
        tail reading them gets `resume_tail_s` first to deliver the pieces and the run's own
        final frame (the record has the answer, not its pieces)."""
        patient_until = time.monotonic() + self._settings.resume_tail_s
        while self._hub.following(stream.run_id):
            await asyncio.sleep(self._settings.resume_poll_s)
            if tail is not None and not tail.done() and time.monotonic() < patient_until:
                continue
            await look_up(self._runs, self._hub, stream)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])
