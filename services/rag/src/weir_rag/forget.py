""" "Forget me" in the knowledge service: the pure rules (which stored files go, which
ingestions are refused). `Knowledge.forget_user` and `Knowledge.ingest` apply them.

Stored files are content-addressed, so one file may back documents of several users (or a
shared one): a user's file is deleted only when no other document uses it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from weir_common.events import IngestRequested
from weir_common.tombstone import forgotten


def orphaned(refs: Iterable[str], in_use: Collection[str]) -> list[str]:
    """The stored files to delete: the distinct, non-empty `refs` that no other document
    uses (`in_use`), in their first order."""
    return [ref for ref in dict.fromkeys(refs) if ref and ref not in in_use]


def refused(request: IngestRequested, forgotten_at: datetime | None) -> bool:
    """True when `request` is for a private document requested at or before its owner's
    tombstone (shared documents have no owner, and are never refused)."""
    return request.owner is not None and forgotten(request.occurred_at, forgotten_at)


REFUSED_REASON = "its owner was forgotten (forget me) after the upload; it was not ingested"
