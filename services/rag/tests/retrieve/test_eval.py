"""The ablation runner: corpus + qrels in, a matrix of recall and nDCG out."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from weir_rag.retrieve import eval as eval_cli
from weir_rag.retrieve.evaluation import ablation_sets, format_matrix, load_corpus, load_qrels

DOCS = [
    {"id": "d1", "text": "The blue heron nests near the river delta", "collection": "birds"},
    {"id": "d2", "text": "Sparrows eat seeds in winter gardens", "collection": "birds"},
    {"id": "d3", "text": "Kafka partitions order messages per key", "collection": "ops"},
    {"id": "d4", "text": "A broker stores partitions on disk", "collection": "ops"},
]
QRELS = [
    {"id": "q1", "query": "where do herons nest", "relevant": ["d1"], "collection": "birds",
     "category": "lookup"},
    {"id": "q2", "query": "message ordering in kafka", "relevant": ["d3"], "collection": "ops",
     "category": "lookup"},
    {"id": "q3", "query": "what stores partitions", "relevant": ["d4", "d3"], "collection": "ops",
     "category": "multi"},
]  # fmt: skip


def write_jsonl(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.unit
def test_loaders_and_matrix_format(tmp_path: Path) -> None:
    docs = load_corpus(write_jsonl(tmp_path / "c.jsonl", DOCS))
    queries = load_qrels(write_jsonl(tmp_path / "q.jsonl", QRELS))
    assert docs[0].chunk().collection == "birds"
    assert queries[2].relevant == frozenset({"d3", "d4"})
    table = format_matrix({"x": {"overall": {"recall@5": 1, "recall@10": 1, "ndcg@10": 0.5}}})
    assert table.splitlines()[1].split()[-3:] == ["1.000", "1.000", "0.500"]
    assert "full + llm rerank" in ablation_sets(with_llm=True)
    assert "full + llm rerank" not in ablation_sets()


@pytest.mark.integration
def test_cli_prints_the_ablation_matrix(
    milvus_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MILVUS_URI", milvus_env["MILVUS_URI"])
    monkeypatch.delenv("LLM_MODEL", raising=False)
    out = tmp_path / "matrix.json"
    code = eval_cli.main([
        "--corpus", str(write_jsonl(tmp_path / "c.jsonl", DOCS)),
        "--qrels", str(write_jsonl(tmp_path / "q.jsonl", QRELS)),
        "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("switch set")]
    assert table[0].split()[-3:] == ["R@5", "R@10", "nDCG@10"]
    results = json.loads(out.read_text())
    assert set(results) == set(ablation_sets())
    bm25 = results["bm25 only"]
    assert bm25["overall"]["recall@10"] == 1.0
    assert bm25["by_category"]["multi"]["queries"] == 1


@pytest.mark.unit
def test_cli_needs_milvus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MILVUS_URI", raising=False)
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)
    assert eval_cli.main(["--corpus", str(path), "--qrels", str(path)]) == 2
