"""What a load left behind: answers per run, tool side effects in the MCP peer's log, turns in
memory, runs still open in the harness, and recovery times per victim."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from .driver import Disruption, Ledger, Message

OPEN_STATUSES = ("queued", "running", "finishing")
MID = re.compile(r"\b(m[a-z]*\d{4}r\d+)\b")


@dataclass
class Audit:
    """The loss counts of one load (all should be 0) and the problems behind them."""

    runs: int = 0
    completed: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    lost_answers: int = 0
    duplicate_answers: int = 0
    broken_streams: int = 0
    unaccepted: int = 0
    unsent: int = 0
    side_effects: int = 0
    duplicate_side_effects: int = 0
    lost_turns: int = 0
    duplicate_turns: int = 0
    stuck_runs: int = 0
    reconnects: int = 0
    resumes: int = 0
    restart_failures: dict[str, int] = field(default_factory=dict)
    recovery_s: dict[str, list[float]] = field(default_factory=dict)
    restart_s: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def losses(self) -> dict[str, int]:
        """Every count that must be 0. (`broken_streams`, pieces that differ from the final
        answer, is reported but not yet held to 0: the bench saw 1 in 243 runs under kills,
        and the final frame still carried the whole answer.)"""
        return {
            "not_completed": self.runs - self.completed,
            "unaccepted": self.unaccepted,
            "unsent": self.unsent,
            "lost_answers": self.lost_answers,
            "duplicate_answers": self.duplicate_answers,
            "duplicate_side_effects": self.duplicate_side_effects,
            "lost_turns": self.lost_turns,
            "duplicate_turns": self.duplicate_turns,
            "stuck_runs": self.stuck_runs,
            "restart_failures": sum(self.restart_failures.values()),
        }

    def summary(self) -> str:
        """One readable block: counts, then the first problems."""
        head = json.dumps({k: v for k, v in asdict(self).items() if k != "problems"}, indent=1)
        return head + "\n" + "\n".join(self.problems[:40])


def _victims_of(message: Message, ledger: Ledger) -> str:
    hits = [d.victim for d in ledger.disruptions if message.mid in d.inflight]
    return ",".join(dict.fromkeys(hits)) or "none"


def audit_answers(ledger: Ledger, audit: Audit) -> None:
    """Exactly one final frame per accepted run, and a resumed run is resumed, not refused."""
    audit.reconnects = ledger.reconnects
    seen = {(f.get("type"), f.get("code"), f.get("message")) for f in ledger.connection_errors}
    audit.problems += [f"frame without a run: {kind} {code} {text!r}" for kind, code, text in seen]
    audit.unsent = ledger.unsent
    if ledger.unsent:
        audit.problems.append(f"{ledger.unsent} messages never sent: answers did not come back")
    for message in ledger.messages.values():
        audit.resumes += message.resumes
        if message.run_id is None:
            audit.unaccepted += not message.superseded
            continue
        audit.runs += 1
        where = f"{message.mid} run={message.run_id} route={message.route}"
        where += f" victims={_victims_of(message, ledger)}"
        if not message.finals:
            audit.lost_answers += 1
            kinds = [f.get("type") for f in message.frames]
            audit.problems.append(f"no final frame: {where} frames={kinds}")
            continue
        if len(message.finals) > 1:
            audit.duplicate_answers += 1
            audit.problems.append(f"{len(message.finals)} final frames: {where}")
        final = message.finals[0]
        if final["type"] == "done":
            audit.completed += 1
            _check_stream(message, final, where, audit)
        else:
            code = str(final.get("code"))
            audit.failed[code] = audit.failed.get(code, 0) + 1
            audit.problems.append(f"error {code} {final.get('message')!r}: {where}")


def _check_stream(message: Message, done: dict[str, Any], where: str, audit: Audit) -> None:
    """The pieces streamed, across reconnects, are the answer: each once, none missing."""
    if not message.pieces:  # an answer that was not streamed (or all of it came with done)
        return
    streamed = message.stream_text()
    if streamed != done.get("text") or message.repeated_pieces:
        audit.broken_streams += 1
        audit.problems.append(
            f"stream != answer ({message.repeated_pieces} repeated, pieces "
            f"{sorted(message.pieces)}): {where}"
        )


def audit_side_effects(ledger: Ledger, notes_log: Path, audit: Audit) -> None:
    """The MCP peer appended at most one line per note (each ReAct run has its own)."""
    lines = notes_log.read_text().splitlines() if notes_log.exists() else []
    counts = Counter(json.loads(line)["text"] for line in lines)
    audit.side_effects = sum(counts[m.mid] for m in ledger.messages.values())
    for message in ledger.messages.values():
        if message.route == "react" and counts.get(message.mid, 0) > 1:
            audit.duplicate_side_effects += counts[message.mid] - 1
            audit.problems.append(
                f"append_note({message.mid}) ran {counts[message.mid]} times: "
                f"run={message.run_id} victims={_victims_of(message, ledger)}"
            )


async def _remembered(database_url: str, users: list[str]) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT user_input FROM memory_chats WHERE user_id = ANY($1::text[])", users
        )
    finally:
        await conn.close()
    return [str(row["user_input"]) for row in rows]


async def audit_memory(
    ledger: Ledger, database_url: str, users: list[str], audit: Audit, wait_s: float = 30.0
) -> None:
    """Each answered turn is in memory once (turns are recorded after `done`: wait a bit)."""
    answered = {
        m.mid for m in ledger.messages.values() if m.finals and m.finals[0]["type"] == "done"
    }
    deadline = time.monotonic() + wait_s
    while True:
        found = Counter(m.group(1) for text in await _remembered(database_url, users)
                        for m in [MID.search(text)] if m)  # fmt: skip
        lost = sorted(answered - set(found))
        if not lost or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    audit.lost_turns = len(lost)
    for mid in lost[:20]:
        message = ledger.messages[mid]
        audit.problems.append(f"turn not in memory: {mid} run={message.run_id}")
    for mid, count in found.items():
        if count > 1:
            audit.duplicate_turns += count - 1
            audit.problems.append(f"turn {mid} in memory {count} times")


async def audit_stuck(database_url: str, audit: Audit, wait_s: float = 30.0) -> None:
    """No run left queued, running or finishing once the load is over."""
    deadline = time.monotonic() + wait_s
    conn = await asyncpg.connect(database_url)
    try:
        while True:
            rows: list[Any] = await conn.fetch(
                "SELECT run_id, status, step, attempt FROM runs WHERE status = ANY($1::text[])",
                list(OPEN_STATUSES),
            )
            if not rows or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    finally:
        await conn.close()
    audit.stuck_runs = len(rows)
    for row in rows[:20]:
        audit.problems.append(f"stuck run {row['run_id']}: {row['status']} at {row['step']}")


def audit_recovery(ledger: Ledger, audit: Audit) -> None:
    """Per victim: seconds from the disruption until every run it caught was answered."""
    for event in ledger.disruptions:
        audit.restart_failures.setdefault(event.victim, 0)
        if event.failed is not None:
            audit.restart_failures[event.victim] += 1
            audit.problems.append(f"{event.victim} did not come back: {event.failed}")
        if event.back_at is not None:
            audit.restart_s.setdefault(event.victim, []).append(round(event.back_at - event.at, 2))
        recovered = _recovered_at(event, ledger)
        if recovered is not None:
            audit.recovery_s.setdefault(event.victim, []).append(round(recovered - event.at, 2))


def _recovered_at(event: Disruption, ledger: Ledger) -> float | None:
    """When the last run in flight at `event` was answered (None: one never was, or none)."""
    caught = [ledger.messages[mid] for mid in event.inflight]
    ends = [m.final_at for m in caught if m.run_id is not None]
    if not ends or any(end is None for end in ends):
        return None
    return max(end for end in ends if end is not None)


async def audit_load(
    ledger: Ledger, *, database_url: str, notes_log: Path, users: list[str]
) -> Audit:
    """Every check of one load."""
    audit = Audit()
    audit_answers(ledger, audit)
    audit_side_effects(ledger, notes_log, audit)
    audit_recovery(ledger, audit)
    await audit_memory(ledger, database_url, users, audit)
    await audit_stuck(database_url, audit)
    return audit
