"""Reading a streamed answer: the provider's own chunks when they are OpenAI's, else litellm's.

litellm opens the call (provider, endpoint, credentials, time-outs) and wraps the provider's
stream in its `CustomStreamWrapper`, which rebuilds every chunk as its own response object,
~0.3-0.4 ms of CPU a chunk: `LiteLLMClient.stream` spent 133-171 ms on a 300-token answer
and 18 ms on a 20-token one, against 47-68 and 9-12 ms reading the stream litellm wraps
(`openai/…` model, scripted server in another process, one token per chunk, two rounds
each), more than everything else a turn does once answers are a few hundred tokens long.
When litellm talks to an OpenAI-compatible endpoint (provider ``openai``), the
wrapped stream is the OpenAI SDK's, whose chunks are already in the format weir reads, and
`LiteLLMClient.stream` reads it directly. Other providers' chunks go through the wrapper,
which is what translates them. The wrapper's guard against a model caught in a loop is kept,
with litellm's own limit (the same text chunk, over two characters,
`litellm.REPEATED_STREAMING_CHUNK_LIMIT` times in a row ends the call with a transient
error); not kept: its success logging and pricing (off in weir anyway) and its
removal of ``<s>``-style tokens some Hugging Face servers leak.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from openai import AsyncStream

from weir_common.llm.types import LLMError, Usage


def openai_chunks(response: Any, repeat_limit: int) -> AsyncIterator[Any] | None:
    """The provider's stream under litellm's wrapper, when it is OpenAI's (ended when one
    text chunk comes `repeat_limit` times in a row); else None."""
    raw = getattr(response, "completion_stream", None)
    if getattr(response, "custom_llm_provider", None) == "openai" and isinstance(raw, AsyncStream):
        return _looping_ends(raw, repeat_limit)
    return None


async def _looping_ends(chunks: AsyncStream[Any], limit: int) -> AsyncIterator[Any]:
    """`chunks`, ended by a transient `LLMError` when the model repeats itself."""
    last, repeats = None, 0
    async for chunk in chunks:
        text = chunk.choices[0].delta.content if chunk.choices else None
        if isinstance(text, str) and len(text) > 2 and text == last:
            repeats += 1
            if repeats >= limit:
                raise LLMError(True, f"the model repeated {text!r} {repeats} times: a loop")
        else:
            last, repeats = text, 1
        yield chunk


def counted_usage(litellm: Any, model: str, messages: list[Any], completion: str) -> Usage:
    """litellm's own count, for a provider whose stream reports no usage."""
    return Usage(
        prompt_tokens=int(litellm.token_counter(model=model, messages=messages)),
        completion_tokens=int(litellm.token_counter(model=model, text=completion)),
    )
