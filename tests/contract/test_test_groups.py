"""`make test-e2e` runs on two xdist workers with `--dist loadgroup`: the tests of the shared
product on one, the modules that start services of their own on the other. If the grouping
stopped working (pytest 9.2's node ids make xdist 3.8's a no-op, pytest-xdist#1386), nothing
would fail, but both workers would start every product: minutes more, on two cores. This
runs the installed pytest and xdist on two small groups and checks each stays on one worker.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

_MODULE = """
import pytest

pytestmark = pytest.mark.xdist_group("{group}")


@pytest.mark.parametrize("n", range(4))
def test_{group}(n: int) -> None:
    pass
"""


def test_loadgroup_keeps_each_group_on_one_worker(tmp_path: Path) -> None:
    for group in ("product", "own"):
        (tmp_path / f"test_{group}.py").write_text(_MODULE.format(group=group))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-v", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = {}
    for worker, group in re.findall(r"\[(gw\d)\].*PASSED \S+::test_(\w+)\[", done.stdout):
        workers.setdefault(group, set()).add(worker)
    assert set(workers) == {"product", "own"}, done.stdout
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers
