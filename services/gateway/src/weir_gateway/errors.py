"""What a client is told when a run fails: a code and a short reason in weir's own words.
The raw reason (an engine's or a provider's error text) stays in the run record for ops
(the harness's `/runs/{id}`); it may name hosts, collections or keys and never reaches a
client."""

from __future__ import annotations

import re

#: What each step does, in words a user understands.
STEP_WORDS = {
    "memory.context.requested": "read memory",
    "route.requested": "decide how to answer",
    "rag.retrieve.requested": "search the knowledge base",
    "tools.call.requested": "call a tool",
    "answer.generate.requested": "generate the answer",
    "turn.completed": "store the turn",
}
_FAILED = re.compile(r"^(?P<step>[a-z_.]+) failed after (?P<attempts>\d+) attempt")


def public_reason(code: str, reason: str | None) -> str:
    """A short reason for `code` that carries nothing of the raw `reason` but the step and
    the number of attempts."""
    found = _FAILED.match(reason or "")
    if found:
        what = STEP_WORDS.get(found["step"], "finish a step")
        attempts = int(found["attempts"])
        tries = "once" if attempts == 1 else f"{attempts} times"
        return f"could not {what} (tried {tries}); the run failed — try again later"
    if code == "invalid_request":
        return "the request was not valid"
    return "the run failed — try again later"
