"""Root conftest: the session-wide stack of real engines (started only when a test asks), and
no test without a tier: `make test` runs tiers by marker, so an unmarked test never ran."""

from __future__ import annotations

import pytest

pytest_plugins = ["weir_deploy.pytest_plugin"]

TIERS = frozenset({"unit", "integration", "e2e", "broker", "chaos", "browser"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fail the collection when a test has no tier marker (`make test` would skip it)."""
    untiered = [i.nodeid for i in items if not TIERS & {m.name for m in i.iter_markers()}]
    if untiered:
        raise pytest.UsageError(
            f"{len(untiered)} tests have no tier marker ({', '.join(sorted(TIERS))}), so no"
            f" `make test` target runs them; mark their modules: {untiered[:5]}"
        )
