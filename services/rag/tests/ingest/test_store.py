"""The local-folder object store."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_rag.ingest import LocalObjectStore, ObjectNotFoundError

pytestmark = pytest.mark.unit


async def test_content_addressed_round_trip(tmp_path: Path) -> None:
    store = LocalObjectStore.under(tmp_path)
    ref = await store.put(b"hello")
    assert ref.startswith("file://")
    assert ref == await store.put(b"hello")
    assert ref.endswith(
        "/objects/2c/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )
    assert await store.get(ref) == b"hello"
    assert await store.delete(ref) is True
    assert await store.delete(ref) is False
    with pytest.raises(ObjectNotFoundError):
        await store.get(ref)


@pytest.mark.parametrize("ref", ["file:///etc/passwd", "s3://bucket/key", "file:///x/../etc/hosts"])
async def test_refs_outside_the_store_are_refused(tmp_path: Path, ref: str) -> None:
    with pytest.raises(ObjectNotFoundError):
        await LocalObjectStore.under(tmp_path).get(ref)


async def test_traversal_out_of_the_root_is_refused(tmp_path: Path) -> None:
    store = LocalObjectStore.under(tmp_path)
    ref = await store.put(b"x")
    with pytest.raises(ObjectNotFoundError):
        await store.get(ref.rsplit("/", 2)[0] + "/../../secret")
