"""run.py in a child process, as a user runs it, with its cache and data inside the test's folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from memharness.memsys.products.adapter import venv_path
from paths import ROOT, TESTS

PRODUCT_NAMES = {"mem0": "mem0", "amem": "A-Mem", "lightrag": "LightRAG"}


def needs_product(product: str) -> pytest.MarkDecorator:
    """Skip unless the product's virtualenv is installed (where the adapter looks), naming its make target."""
    return pytest.mark.skipif(
        not venv_path(product).exists(),
        reason=f"{PRODUCT_NAMES[product]} is not installed: run `make product-{product}`",
    )


def offline_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a child run: cache and data in ``tmp_path``, no hub, the test helpers importable."""
    return {
        **os.environ,
        "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"),
        "MEMHARNESS_DATA": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(TESTS),
        **extra,
    }


def run_py(
    tmp_path: Path, *overrides: str, multirun: bool = False, timeout: int = 900, **env: str
) -> subprocess.CompletedProcess:
    """``python run.py [-m] ...`` into ``tmp_path/run`` (or the sweep ``tmp_path/runs``) unless the
    overrides name ``hydra.run.dir`` / ``hydra.sweep.dir`` themselves."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    where = (
        []
        if any(o.startswith(key + "=") for o in overrides)
        else [f"{key}={tmp_path / ('runs' if multirun else 'run')}"]
    )
    cmd = [sys.executable, "run.py", *(["-m"] if multirun else []), *where, "progress=false"]
    return subprocess.run(
        [*cmd, *overrides],
        cwd=ROOT,
        env=offline_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
