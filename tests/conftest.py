"""Shared fixtures: composing the Hydra config offline with every write under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

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
