"""The profile layer and preferences (F32, F33): rules at once, model extraction when
configured, persisted in PostgreSQL and rendered as seed 000's preference block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import structlog

from . import preferences
from .preferences import MULTI_VALUED, Preference, canonical_key
from .profile_repository import ProfileStore

log = structlog.get_logger(__name__)


class Profile:
    """One user's key/value profile; the preferences are part of it."""

    def __init__(self, store: ProfileStore) -> None:
        self.store = store

    async def learn(
        self, user_id: str, prefs: Sequence[Preference], *, source: str, runs: Sequence[str],
        at: datetime,
    ) -> list[Preference]:  # fmt: skip
        """Save preferences (likes accumulate, a name replaces the old one)."""
        for pref in prefs:
            await self.store.upsert(
                user_id, pref.key, pref.value, multi=pref.key in MULTI_VALUED, source=source,
                runs=runs, now=at,
            )  # fmt: skip
        if prefs:
            log.info("memory.preferences.saved", user_id=user_id, source=source,
                     keys=[p.key for p in prefs])  # fmt: skip
        return list(prefs)

    async def learn_text(
        self, user_id: str, text: str, *, runs: Sequence[str], at: datetime
    ) -> list[Preference]:
        """Apply the rules to a message (seed 000: "我叫" → 姓名, "我喜欢" → 喜好)."""
        return await self.learn(user_id, preferences.extract(text), source="rule", runs=runs, at=at)

    async def learn_pairs(
        self, user_id: str, pairs: Mapping[str, str], *, source: str, runs: Sequence[str],
        at: datetime,
    ) -> list[Preference]:  # fmt: skip
        """Save key/values a model extracted (labels such as 姓名 mapped to canonical keys)."""
        prefs = [
            Preference(canonical_key(k), v.strip()) for k, v in pairs.items() if v and v.strip()
        ]
        return await self.learn(user_id, prefs, source=source, runs=runs, at=at)

    async def get(self, user_id: str) -> dict[str, list[str]]:
        """The user's profile."""
        return await self.store.get(user_id)
