"""PostgreSQL storage of the profile layer: key/value preferences and attributes per user."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..db import Database

MAX_VALUES = 8


class ProfileStore:
    """`memory_profile`: one row per user and key; a key holds one value or a short list."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def upsert(
        self,
        user_id: str,
        key: str,
        value: str,
        *,
        multi: bool,
        source: str,
        runs: Sequence[str],
        now: datetime,
    ) -> None:
        """Set `key` to `value`, or add `value` to the key's list when `multi` (newest last,
        at most `MAX_VALUES`, no duplicates)."""
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_profile (user_id, key, vals, source, source_runs, updated_at)"
                " VALUES ($1, $2, ARRAY[$3::text], $4, $5::text[], $6)"
                " ON CONFLICT (user_id, key) DO UPDATE SET"
                "  vals = CASE WHEN $7 THEN (SELECT coalesce(array_agg(v ORDER BY o), '{}') FROM"
                "   (SELECT v, o FROM"
                "    unnest(array_remove(memory_profile.vals, $3::text) || $3::text)"
                "    WITH ORDINALITY AS t(v, o) ORDER BY o DESC LIMIT $8) s)"
                "   ELSE ARRAY[$3::text] END,"
                "  source = EXCLUDED.source, updated_at = EXCLUDED.updated_at,"
                "  source_runs ="
                "   ARRAY(SELECT DISTINCT unnest(memory_profile.source_runs || $5::text[]))",
                user_id,
                key,
                value,
                source,
                list(runs),
                now,
                multi,
                MAX_VALUES,
            )

    async def get(self, user_id: str) -> dict[str, list[str]]:
        """The user's profile: key → values (oldest first)."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT key, vals FROM memory_profile WHERE user_id = $1 ORDER BY key",
                user_id,
            )
        return {r["key"]: list(r["vals"]) for r in rows}

    async def rows(self, user_id: str) -> list[dict[str, object]]:
        """The profile with provenance, for export and listing."""
        async with self._db.connection() as conn:
            rows = await conn.fetch(
                "SELECT key, vals, source, source_runs, updated_at FROM memory_profile"
                " WHERE user_id = $1 ORDER BY key",
                user_id,
            )
        return [
            {
                "key": r["key"],
                "values": list(r["vals"]),
                "source": r["source"],
                "source_runs": list(r["source_runs"]),
                "updated_at": r["updated_at"].isoformat(),
            }
            for r in rows
        ]

    async def delete(self, user_id: str, key: str) -> bool:
        """Forget one key; False when the user has no such key."""
        async with self._db.connection() as conn:
            status = await conn.execute(
                "DELETE FROM memory_profile WHERE user_id = $1 AND key = $2", user_id, key
            )
        return bool(status.endswith(" 1"))
