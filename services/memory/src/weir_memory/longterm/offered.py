"""Passage vectors another service made of the texts memory is about to embed.

The router embeds each message as a passage to match it against the tools, and the turn
command brings that vector (`TurnCompleted.message_vector`, see
:mod:`weir_common.events.vectors`). Memory embeds the same text the same way for the turn's
chat vector (and the offline analyzer's memory, the same text). The offer is kept here, by
text, until the turn is written (at once, or by the analysis worker): only a vector of this
memory's embedder, of this very text and of its dimension is taken; anything else, and an
offer lost with a restart, is embedded here as before. Memory keeps its own here too: the
passage vector it made of a message to recall for it (`LongTermMemory.query_vector`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from weir_common.embeddings import Embedder
from weir_common.events import PassageVector

from .models import Vector


class OfferedPassages:
    """Offers by text (LRU of `size`); each is taken once."""

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._vectors: OrderedDict[str, Vector] = OrderedDict()

    def offer(self, embedder: Embedder, text: str, offered: PassageVector | None) -> bool:
        """Keep `offered` for `text` when it is `text`'s passage vector by `embedder`."""
        vector = offered.for_text(embedder.name, text, embedder.dimension) if offered else None
        if vector is None:
            return False
        self.keep(text, vector)
        return True

    def keep(self, text: str, vector: Vector) -> None:
        """Keep `vector`, `text`'s passage vector by this memory's embedder (made here, or
        offered), until the text is embedded."""
        self._vectors[text] = vector
        while len(self._vectors) > self._size:
            self._vectors.popitem(last=False)

    async def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[Vector]:
        """`embed_documents(texts)`, with the offered vectors taken instead of embedding."""
        found = {t: v for t in dict.fromkeys(texts) if (v := self._vectors.pop(t, None))}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        made = await embedder.embed_documents(missing) if missing else []
        found |= dict(zip(missing, made, strict=True))
        return [found[t] for t in texts]
