"""tantivy's one-writer-per-folder rule, as two processes on one data folder meet it (a
service restarting while its predecessor shuts down): the second reads at once, and its
writes fail as a transient error, not as poison, until the first lets go."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.errors import is_transient
from weir_common.search.documents import Scope
from weir_common.search.tantivy_index import IndexBusyError, TantivyLexicalIndex
from weir_common.testing.chunks import make_chunk

pytestmark = pytest.mark.integration


async def test_a_second_writer_waits_transiently_for_the_first(tmp_path: Path) -> None:
    first, second = TantivyLexicalIndex(tmp_path), TantivyLexicalIndex(tmp_path)
    await first.open()
    await second.open()
    await first.upsert([make_chunk("a", "the heron stood in the river")])
    assert [h.chunk.chunk_id for h in await second.search("heron", 5, Scope())] == ["a"]
    with pytest.raises(IndexBusyError) as busy:
        await second.upsert([make_chunk("b", "the heron flew off")])
    assert is_transient(busy.value)
    await first.close()
    await second.upsert([make_chunk("b", "the heron flew off")])
    assert {h.chunk.chunk_id for h in await second.search("heron", 5, Scope())} == {"a", "b"}
    await second.close()
