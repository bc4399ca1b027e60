"""Each pytest-xdist worker gets its own share of the cores, and the embedded backend follows them."""

from __future__ import annotations

import os

import pytest
from conftest import pin_xdist_worker
from memharness.memsys.services.backends import local


@pytest.fixture
def affinity(monkeypatch):
    """A machine with cores 0-3; records what the worker pins itself to."""
    pinned: list = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: pinned.append(list(cores)))
    return pinned


@pytest.mark.parametrize(
    ("worker", "count", "expected"),
    [("gw0", "2", [0, 1]), ("gw1", "2", [2, 3]), ("gw3", "4", [3]), ("gw2", "3", [2])],
)
def test_each_worker_takes_its_own_cores(affinity, monkeypatch, worker, count, expected):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    assert pin_xdist_worker() == expected
    assert affinity == [expected]


def test_no_pinning_outside_xdist_or_with_more_workers_than_cores(affinity, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert pin_xdist_worker() is None
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw4")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "5")
    assert pin_xdist_worker() is None
    assert affinity == []


def test_the_embedded_backend_uses_the_cores_it_may_run_on(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")  # never loaded: weights load on the first call
    assert local.usable_cores() == 1
    assert local.LlamaCppBackend(model_path=str(model))._n_threads == 1
    assert local.LlamaCppBackend(model_path=str(model), n_threads=3)._n_threads == 3
