"""Document vectors cached on disk, keyed by the embedder and the exact texts."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from weir_common.embeddings import Embedder, Vector


async def cached_embeddings(
    embedder: Embedder, texts: Sequence[str], data_dir: Path
) -> list[Vector]:
    """``embedder.embed_documents(texts)``, read from ``<data_dir>/bench-cache`` when present."""
    digest = hashlib.sha256(embedder.name.encode())
    for text in texts:
        digest.update(text.encode() + b"\0")
    path = data_dir / "bench-cache" / f"{digest.hexdigest()[:24]}.npy"
    if path.exists():
        return [row.tolist() for row in np.load(path)]
    vectors = await embedder.embed_documents(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.asarray(vectors, dtype=np.float32))
    return vectors
