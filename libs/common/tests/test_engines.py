"""What the shared engine helpers read from an error."""

from __future__ import annotations

import itertools

import pytest

from weir_common.engines import milvus_not_loaded, redact

pytestmark = pytest.mark.unit


def _chained(*messages: str) -> BaseException:
    """Exceptions raised while handling each other, as `raise ... from` would chain them."""
    errors = [RuntimeError(m) for m in messages]
    for outer, inner in itertools.pairwise(errors):
        outer.__context__ = inner
    return errors[0]


def test_a_released_collection_is_found_anywhere_in_the_chain() -> None:
    assert milvus_not_loaded(_chained("search failed", "collection is in state 'released'"))
    assert not milvus_not_loaded(_chained("search failed", "connection refused"))


def test_a_chain_that_loops_back_on_itself_ends() -> None:
    """pymilvus's connection recovery leaves exceptions whose contexts form a cycle (a
    Milvus restart under load): reading them must not spin forever."""
    looped = _chained("search failed", "recovery failed", "connection refused")
    inner = looped.__context__
    assert inner is not None
    assert inner.__context__ is not None
    inner.__context__.__context__ = looped
    assert not milvus_not_loaded(looped)


def test_passwords_never_reach_a_log_line() -> None:
    assert redact("postgresql://weir:s3cret@db:5432/weir") == "postgresql://weir:***@db:5432/weir"
    assert redact("redis://cache:6379/0") == "redis://cache:6379/0"
