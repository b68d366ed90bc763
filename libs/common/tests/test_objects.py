"""The local object store: content-addressed, references stay inside the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.objects import LocalObjectStore

pytestmark = pytest.mark.unit


def test_put_then_get_round_trips_and_dedupes(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    ref = store.put(b"%PDF-1.7 hello", "Report.PDF")
    assert ref.startswith("file://")
    assert ref.endswith(".pdf")
    assert store.get(ref) == b"%PDF-1.7 hello"
    assert store.put(b"%PDF-1.7 hello", "copy.pdf") == ref


def test_references_outside_the_store_are_refused(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    (tmp_path / "secret.txt").write_text("no")
    with pytest.raises(ValueError, match="outside"):
        store.get((tmp_path / "secret.txt").as_uri())
    with pytest.raises(ValueError, match="not a local"):
        store.get("s3://bucket/x")
