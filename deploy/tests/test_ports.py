"""Where free ports are picked: each pytest-xdist worker in a slice of its own, and never a
port the process handed out lately (picked, not yet bound)."""

from __future__ import annotations

import itertools
from collections import deque

import pytest

from weir_deploy.base import _PORT_RANGE, free_port, port_range

pytestmark = pytest.mark.unit


def test_outside_xdist_the_whole_range() -> None:
    assert port_range({}) == _PORT_RANGE


def test_each_worker_picks_in_a_slice_no_other_worker_has() -> None:
    slices = [
        port_range({"PYTEST_XDIST_WORKER": f"gw{i}", "PYTEST_XDIST_WORKER_COUNT": "3"})
        for i in range(3)
    ]
    assert slices[0][0] == _PORT_RANGE[0]
    assert slices[-1][1] <= _PORT_RANGE[1]
    for (_, high), (low, _) in itertools.pairwise(slices):
        assert high <= low, slices
    assert all(high - low >= 1000 for low, high in slices)


def test_odd_values_fall_back_to_the_whole_range() -> None:
    assert port_range({"PYTEST_XDIST_WORKER": "master", "PYTEST_XDIST_WORKER_COUNT": "2"}) == (
        _PORT_RANGE
    )
    assert port_range({"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": ""}) == (
        _PORT_RANGE
    )


def test_ports_picked_before_any_is_bound_are_all_different(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a slice of 20 ports: 200 random tries would repeat one within a few picks without the
    # memory of what was handed out
    monkeypatch.setattr("weir_deploy.base.port_range", lambda: (28000, 28020))
    monkeypatch.setattr("weir_deploy.base._HANDED_OUT", deque(maxlen=512))
    picked = [free_port() for _ in range(15)]
    assert len(set(picked)) == 15, picked
