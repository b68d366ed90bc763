"""The local object store: content-addressed, references stay inside the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.objects import LocalObjectStore, ObjectNotFoundError

pytestmark = pytest.mark.unit


async def test_put_then_get_round_trips_and_dedupes(tmp_path: Path) -> None:
    store = LocalObjectStore.under(tmp_path)
    ref = await store.put(b"%PDF-1.7 hello")
    assert ref.startswith("file://")
    assert await store.get(ref) == b"%PDF-1.7 hello"
    assert await store.put(b"%PDF-1.7 hello") == ref
    assert await store.delete(ref) is True
    with pytest.raises(ObjectNotFoundError):
        await store.get(ref)


async def test_references_outside_the_store_are_refused(tmp_path: Path) -> None:
    store = LocalObjectStore.under(tmp_path)
    (tmp_path / "secret.txt").write_text("no")
    with pytest.raises(ObjectNotFoundError, match="outside"):
        await store.get((tmp_path / "secret.txt").as_uri())
    with pytest.raises(ObjectNotFoundError, match="not a file"):
        await store.get("s3://bucket/x")
