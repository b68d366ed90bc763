"""The size budget of a command: what to trim, in which order, so it fits one broker message.

A command over `max_bytes` could never be published (the broker refuses it and the run
would wait for nothing), so it is trimmed before it is written, by rule, least useful first:

1. the content of tool observations, oldest first (each keeps its beginning);
2. evidence passages beyond the top ones (they come best first);
3. memory history, oldest turns first;
4. last resort: the text of the evidence passages kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from weir_common.events import MemoryContext, Observation, Passage, StepCommand

TOP_EVIDENCE = 3  # passages always kept by rule 2
KEEP_CHARS = 500  # the beginning of a trimmed text that is kept
_MARK = " … [trimmed {n} characters to fit the message size]"

Rule = Callable[[StepCommand, int], tuple[StepCommand, str | None]]


def size_of(command: StepCommand) -> int:
    """The bytes `command` takes as a JSON message body (an upper bound of the encoder's)."""
    return len(json.dumps(command.model_dump(mode="json"), ensure_ascii=False).encode())


def fit(command: StepCommand, max_bytes: int) -> tuple[StepCommand, list[str]]:
    """`command` trimmed by the rules until it fits `max_bytes`; what each rule trimmed."""
    notes: list[str] = []
    for rule in (_trim_observations, _drop_evidence, _drop_history, _trim_evidence):
        if size_of(command) <= max_bytes:
            break
        command, note = rule(command, max_bytes)
        if note is not None:
            notes.append(note)
    return command, notes


def _cut(text: str, excess: int) -> str | None:
    """`text` shortened by at least `excess` characters (never below KEEP_CHARS); None when
    it is too short to shorten. A character is at least one byte, so bytes go too."""
    keep = max(KEEP_CHARS, len(text) - excess - len(_MARK) - 16)
    if keep >= len(text):
        return None
    return text[:keep] + _MARK.format(n=len(text) - keep)


def _trim_observations(command: StepCommand, max_bytes: int) -> tuple[StepCommand, str | None]:
    observations: list[Observation] = list(getattr(command, "observations", []))
    trimmed: list[str] = []
    for i, observation in enumerate(observations):
        excess = size_of(command) - max_bytes
        if excess <= 0:
            break
        content = _cut(observation.content, excess)
        if content is not None:
            observations[i] = observation.model_copy(update={"content": content})
            command = command.model_copy(update={"observations": observations})
            trimmed.append(f"{i + 1} ({observation.tool}, {len(observation.content)} chars)")
    return command, f"observations trimmed: {', '.join(trimmed)}" if trimmed else None


def _drop_evidence(command: StepCommand, max_bytes: int) -> tuple[StepCommand, str | None]:
    evidence: list[Passage] = list(getattr(command, "evidence", []))
    total = len(evidence)
    while len(evidence) > TOP_EVIDENCE and size_of(command) > max_bytes:
        evidence.pop()
        command = command.model_copy(update={"evidence": evidence})
    dropped = total - len(evidence)
    return command, f"evidence: kept the top {len(evidence)} of {total}" if dropped else None


def _drop_history(command: StepCommand, max_bytes: int) -> tuple[StepCommand, str | None]:
    context: MemoryContext | None = getattr(command, "context", None)
    if context is None or not context.history:
        return command, None
    history, total = list(context.history), len(context.history)
    while history and size_of(command) > max_bytes:
        history.pop(0)
        update: dict[str, Any] = {"context": context.model_copy(update={"history": history})}
        command = command.model_copy(update=update)
    return command, f"memory history: dropped the oldest {total - len(history)} of {total} turns"


def _trim_evidence(command: StepCommand, max_bytes: int) -> tuple[StepCommand, str | None]:
    evidence: list[Passage] = list(getattr(command, "evidence", []))
    trimmed = 0
    for i, passage in enumerate(evidence):
        excess = size_of(command) - max_bytes
        if excess <= 0:
            break
        text = _cut(passage.text, excess)
        if text is not None:
            evidence[i] = passage.model_copy(update={"text": text})
            command = command.model_copy(update={"evidence": evidence})
            trimmed += 1
    return command, f"evidence text trimmed in {trimmed} passage(s)" if trimmed else None
