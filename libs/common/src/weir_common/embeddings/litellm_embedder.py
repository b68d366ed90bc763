"""Embedder over ``litellm.aembedding`` (any OpenAI-compatible or hosted embedding model)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import structlog
from pydantic import SecretStr

from weir_common.embeddings.base import Vector, batched, normalize
from weir_common.llm.genai import genai_call
from weir_common.llm.litellm_support import import_litellm, logged_llm_error, to_llm_error
from weir_common.llm.stream_assembly import field, parse_usage
from weir_common.llm.types import Usage

log = structlog.get_logger(__name__)


class LiteLLMEmbedder:
    """:class:`~weir_common.embeddings.base.Embedder` calling a model through litellm.

    No client retries (``num_retries=0``); failures raise
    :class:`~weir_common.llm.types.LLMError` with ``transient`` set. The dimension is taken
    from ``dimension`` or discovered on the first call (or :meth:`probe`). Vectors are
    re-normalised locally, whatever the provider returns.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: SecretStr | None = None,
        dimension: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        self.name = model
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        self._dimension = dimension
        self._batch_size = batch_size
        self._timeout_s = timeout_s
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix

    @property
    def dimension(self) -> int:
        """Vector length; raises until configured or discovered (call :meth:`probe`)."""
        if self._dimension is None:
            raise RuntimeError(f"dimension of {self._model!r} unknown yet: await probe() first")
        return self._dimension

    async def _call(self, texts: Sequence[str]) -> list[Vector]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {
            "model": self._model,
            "input": list(texts),
            "timeout": self._timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key.get_secret_value()
        with genai_call("embeddings", self._model) as call:
            try:
                response = await litellm.aembedding(**kwargs)
            except Exception as exc:
                raise logged_llm_error("embed.failed", self._model, exc) from exc
            usage = parse_usage(field(response, "usage")) or Usage()
            call.finish(response_model=field(response, "model"), input_tokens=usage.prompt_tokens)
        rows = sorted(field(response, "data") or [], key=lambda r: int(field(r, "index") or 0))
        vectors = [normalize(field(r, "embedding")) for r in rows]
        if len(vectors) != len(texts):
            raise to_llm_error(
                ValueError(f"{self._model} returned {len(vectors)} vectors for {len(texts)} texts")
            )
        for vec in vectors:
            if self._dimension is None:
                self._dimension = len(vec)
                log.info("embed.dimension.discovered", model=self._model, dimension=len(vec))
            elif len(vec) != self._dimension:
                raise to_llm_error(
                    ValueError(
                        f"{self._model} returned dimension {len(vec)}, expected {self._dimension}"
                    )
                )
        return vectors

    async def probe(self) -> int:
        """Embed a probe text once (if needed) and return the dimension."""
        if self._dimension is None:
            await self._call(["dimension probe"])
        return self.dimension

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages, ``batch_size`` texts per request, batches concurrently."""
        if not texts:
            return []
        started = time.monotonic()
        prefixed = [f"{self._document_prefix}{t}" for t in texts]
        batches = batched(prefixed, self._batch_size)
        if self._dimension is None:  # discover the dimension on one batch first
            first = await self._call(batches[0])
            rest = await asyncio.gather(*(self._call(b) for b in batches[1:]))
            results = [first, *rest]
        else:
            results = list(await asyncio.gather(*(self._call(b) for b in batches)))
        log.debug(
            "embed.documents",
            embedder=self.name,
            count=len(texts),
            duration_s=round(time.monotonic() - started, 3),
        )
        return [vec for batch in results for vec in batch]

    async def embed_query(self, text: str) -> Vector:
        """Embed one search query."""
        return (await self._call([f"{self._query_prefix}{text}"]))[0]
