"""Text analysis and records: the pieces every engine adapter shares."""

from __future__ import annotations

import pytest

from weir_common.search import text
from weir_common.search.documents import Scope
from weir_common.search.records import from_record, safe_name, to_record, visible_owners
from weir_common.search.tantivy_index import _analyzer
from weir_common.testing.chunks import make_chunk

pytestmark = pytest.mark.unit

SAMPLES = [
    "Running dogs' connections were RESTARTED",
    "数据库连接池耗尽导致服务超时",
    "Redis 缓存击穿：检查热点 key 的 TTL (2023年5月)",
    "snake_case and e-mail addresses, x" * 3,
    "a" * 60 + " short",
]


@pytest.mark.parametrize("sample", SAMPLES)
def test_python_terms_equal_tantivy_en_stem(sample: str) -> None:
    """Elasticsearch gets the terms from Python; they must equal tantivy's own chain."""
    assert text.terms(sample) == _analyzer().analyze(text.segment(sample))


def test_chinese_is_segmented_into_words() -> None:
    words = text.terms("数据库连接池耗尽")
    assert {"数据库", "连接", "连接池"} <= set(words)
    assert text.has_cjk("ok 好")
    assert not text.has_cjk("ok")


def test_english_only_text_is_untouched_by_segmentation() -> None:
    assert text.segment("plain English") == "plain English"


def test_records_round_trip() -> None:
    chunk = make_chunk("x-3", "text", owner="alice", raw="| a |")
    assert from_record(to_record(chunk)) == chunk
    assert to_record(make_chunk("y-0", "t"))["owner"] == ""
    assert from_record(to_record(make_chunk("y-0", "t"))).owner is None


def test_visible_owners() -> None:
    assert visible_owners(Scope()) == [""]
    assert visible_owners(Scope(user_id="bob")) == ["", "bob"]


def test_safe_name_is_stable_and_distinguishes_cases() -> None:
    assert safe_name("default") == "default"
    assert safe_name("Default") != safe_name("default")
    assert safe_name("知识库/A") == safe_name("知识库/A")
    assert all(c.isalnum() or c in "-_." for c in safe_name("知识库/A B"))


def test_the_cjk_class_covers_ideographs_only() -> None:
    assert text.has_cjk("汉字 and 漢字")
    assert text.cjk_count("中文 text 㐀 豈") == 4  # extension A and compatibility too
    assert not text.has_cjk("かな 한글 ，")  # kana, hangul, fullwidth: classes of their own
    assert text.CJK_RUN.findall("ab数据库cd连接") == ["数据库", "连接"]
