"""The "forget me" tombstone rule: what happened before a user was forgotten stays forgotten.

A turn in flight when its user is forgotten (or an event redelivered later) carries the time
it happened; it is dropped when that time is not after the user's tombstone. Memory applies
it to turns, the knowledge service to ingestions of private documents.
"""

from __future__ import annotations

from datetime import datetime


def forgotten(occurred_at: datetime, forgotten_at: datetime | None) -> bool:
    """True when something that happened at `occurred_at` predates the tombstone (None: the
    user was never forgotten). Equal times count as forgotten: the forget wins a tie."""
    return forgotten_at is not None and occurred_at <= forgotten_at
