"""Shared fixtures: composing the Hydra config offline with every write under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pin_xdist_worker() -> list[int] | None:
    """Give each pytest-xdist worker its own share of this process's cores (``-n 2`` on 2 cores: one
    each), so the embedded models' threads, which follow the process's cores, never outnumber them:
    llama.cpp's threads spin-wait at every barrier and crawl when two models share cores. Nothing
    happens outside xdist or with more workers than cores. Returns the cores pinned to, if any."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return None
    cores, workers = sorted(os.sched_getaffinity(0)), int(count)
    if workers > len(cores):
        return None
    share, index = len(cores) // workers, int(worker.removeprefix("gw"))
    mine = cores[index * share : (index + 1) * share]
    os.sched_setaffinity(0, mine)
    return mine


pin_xdist_worker()  # before any test module imports torch or llama.cpp, which size their pools once

FAKES = [
    f"hydra.searchpath=[file://{Path(__file__).resolve().parent / 'conf'}]",
    "llm=fake",
    "embedder=fake",
]


@pytest.fixture
def make_cfg(tmp_path):
    """Compose conf/config.yaml with overrides; cache and data dirs live in tmp_path."""

    def _make(*overrides: str, fake: bool = True):
        base = [
            f"cache.path={tmp_path / 'cache.sqlite'}",
            f"data_dir={tmp_path / 'data'}",
            "progress=false",
        ]
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose(
                config_name="config", overrides=base + (FAKES if fake else []) + list(overrides)
            )

    return _make
