"""The size budget of a command: what to trim, in which order, so it fits one broker message.

A command over `max_bytes` could never be published (the broker refuses it and the run
would wait for nothing), so it is trimmed before it is written, by rule, least useful first:

1. the content of tool observations, oldest first (each keeps its beginning);
2. evidence passages beyond the top ones (they come best first);
3. memory history, oldest turns first;
4. last resort: the text of the evidence passages kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir_common.events import MemoryContext, Observation, Passage, StepCommand

TOP_EVIDENCE = 3  # passages always kept by rule 2
KEEP_CHARS = 500  # the beginning of a trimmed text that is kept
_MARK = " … [trimmed {n} characters to fit the message size]"

Rule = Callable[[StepCommand, int], tuple[StepCommand, str | None]]


def size_of(command: StepCommand) -> int:
    """The bytes `command` takes as a JSON message body."""
    return len(command.model_dump_json().encode())


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


def _trim_texts(
    command: StepCommand, max_bytes: int, items: str, text: str
) -> tuple[StepCommand, list[int]]:
    """Shorten field `text` of each element of list `items`, first to last, until the
    command fits; the indexes of the elements shortened."""
    elements: list[Any] = list(getattr(command, items, []))
    trimmed: list[int] = []
    for i, element in enumerate(elements):
        excess = size_of(command) - max_bytes
        if excess <= 0:
            break
        shorter = _cut(getattr(element, text), excess)
        if shorter is not None:
            elements[i] = element.model_copy(update={text: shorter})
            command = command.model_copy(update={items: elements})
            trimmed.append(i)
    return command, trimmed


def _trim_observations(command: StepCommand, max_bytes: int) -> tuple[StepCommand, str | None]:
    before: list[Observation] = list(getattr(command, "observations", []))
    command, trimmed = _trim_texts(command, max_bytes, "observations", "content")
    named = [f"{i + 1} ({before[i].tool}, {len(before[i].content)} chars)" for i in trimmed]
    return command, f"observations trimmed: {', '.join(named)}" if named else None


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
    command, trimmed = _trim_texts(command, max_bytes, "evidence", "text")
    return command, f"evidence text trimmed in {len(trimmed)} passage(s)" if trimmed else None
