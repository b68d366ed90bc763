"""The OpenAI door's encoder: the neutral frames of a run as `chat.completion.chunk`s, or
gathered into one `chat.completion`.

Answer pieces are `delta.content`; everything weir adds (steps, sources, a tool call waiting
for approval, the run's ids and route) rides in the extension field `weir`, on chunks with an
empty `delta`, so strict clients show only the answer. A generation restart (`reset`) cannot
take back text a client already shows: the new attempt starts on a new paragraph, and
`weir.reset` tells weir-aware clients to drop what came before. An `error` becomes a chunk
`{"error": …}`, which the OpenAI SDKs raise. A whole (not streamed) completion whose run
stops to ask the user about a tool call answers at once with how to approve it, since a
client waiting for the whole answer cannot see the question.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from weir_gateway.stream import Frame, kind_of

DROPPED = {
    "title": "a completion ends with the answer; the title comes later: GET /api/conversations",
}
"""Frame kinds this door does not send, with why."""

RESET_SEPARATOR = "\n\n"
ERROR_STATUS = {"deadline": 504}


def _step(frame: Frame) -> dict[str, Any]:
    keys = ("kind", "tool", "arguments", "content", "sources")
    return {k: frame[k] for k in keys if frame.get(k) is not None}


@dataclass
class Completion:
    """One completion being answered: its ids, and what the frames so far added."""

    run_id: str
    conversation_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The completion id (`chatcmpl-<run id>`)."""
        return f"chatcmpl-{self.run_id}"

    def chunk(self, delta: dict[str, Any], finish: str | None = None,
              weir: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
        """One `chat.completion.chunk`."""
        body: dict[str, Any] = {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }  # fmt: skip
        if weir is not None:
            body["weir"] = weir
        return body

    def first(self) -> dict[str, Any]:
        """The opening chunk: the assistant's role, and the run it is."""
        return self.chunk({"role": "assistant", "content": ""}, weir=self.ids())

    def ids(self) -> dict[str, Any]:
        """weir's ids of this completion."""
        return {"run_id": self.run_id, "conversation_id": self.conversation_id}

    def encode(self, frame: Frame) -> dict[str, Any] | None:
        """The chunk of one frame (None: not sent on this door, see DROPPED)."""
        kind = kind_of(frame)
        if kind.startswith("step."):
            self.steps.append(_step(frame))
            return self.chunk({}, weir={"step": self.steps[-1]})
        if kind == "error":
            return error_chunk(frame)
        encoded = {
            "delta": lambda: self.chunk({"content": frame["text"]}),
            "reset": lambda: self.chunk({"content": RESET_SEPARATOR},
                                        weir={"reset": frame["attempt"]}),
            "confirm": lambda: self.chunk({}, weir={"confirm": _ask(frame)}),
            "done": lambda: self.chunk({}, "stop", weir=self.summary(frame)),
        }.get(kind)  # fmt: skip
        return None if encoded is None else encoded()

    def summary(self, done: Frame) -> dict[str, Any]:
        """The `weir` field of a finished completion: route, sources, steps."""
        sources = [s for step in self.steps for s in step.get("sources", [])]
        return {**self.ids(), "route": done.get("route"), "intent": done.get("intent"),
                "offline": done.get("offline"), "sources": sources,
                "steps": self.steps}  # fmt: skip

    def whole(self, done: Frame) -> dict[str, Any]:
        """The `chat.completion` of a run that ended with `done`, or of one that stopped to
        ask the user about a tool call (`confirm`: the run goes on once answered)."""
        if done["type"] == "confirm":
            summary = {**self.summary({}), "confirm": _ask(done)}
            done = {"text": waiting_text(done)}
        else:
            summary = self.summary(done)
        message = {"role": "assistant", "content": done["text"], "refusal": None}
        return {
            "id": self.id, "object": "chat.completion", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop",
                         "logprobs": None}],
            "weir": summary,
        }  # fmt: skip


def waiting_text(ask: Frame) -> str:
    """What a whole completion says when its run stops to ask the user about a tool call."""
    arguments = json.dumps(ask.get("arguments") or {}, ensure_ascii=False)
    return (f"The run waits for your approval to call {ask['tool']}({arguments}). Approve or "
            f"deny it with POST /api/runs/{ask['run_id']}/confirm "
            f'{{"call_id": "{ask["call_id"]}", "approve": true|false}}; the answer is then at '
            f"GET /api/runs/{ask['run_id']}.")  # fmt: skip


def _ask(frame: Frame) -> dict[str, Any]:
    """A `confirm` frame's tool call: answer it with `POST /api/runs/{run_id}/confirm`."""
    return {k: v for k, v in frame.items() if k not in ("type", "conversation_id", "id")}


def error_chunk(frame: Frame) -> dict[str, Any]:
    """An `error` frame in OpenAI's error shape."""
    return {"error": {"message": frame["message"], "type": "server_error",
                      "code": frame.get("code"), "param": None}}  # fmt: skip
