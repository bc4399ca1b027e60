"""Two real processes into one ``hydra.run.dir`` (issue 23, item 3): the second is refused in one
line while the first runs, and the folder holds the first run's files only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from paths import ROOT

LOCK = ".memharness.lock"


def _cmd(run_dir: Path, cache: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "run.py",
        f"hydra.run.dir={run_dir}",
        "progress=false",
        "llm=scripted",
        "embedder=hashing",
        "memory=full_context",
        f"cache.path={cache}",
        "cache.enabled=false",
        "snapshots.enabled=false",
        *extra,
    ]


def test_second_run_into_a_busy_folder_is_refused_and_nothing_mixes(tmp_path: Path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("MEMHARNESS_CACHE", None)
    run_dir, cache = tmp_path / "run", tmp_path / "calls.sqlite"
    slow = ["dataset.limit=3", "llm.max_in_flight=1", "+llm.backend.latency_s=0.4"]
    first = subprocess.Popen(
        _cmd(run_dir, cache, *slow),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "INCOMPLETE.json").is_file():  # the first run is under way
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        second = subprocess.run(
            _cmd(run_dir, cache, "dataset.limit=1"),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        still_running = first.poll() is None
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert still_running  # the refusal happened while the first run held the folder
    assert second.returncode == 2, second.stderr[-2000:]
    errors = [line for line in second.stderr.splitlines() if line.startswith("error: ")]
    assert (
        len(errors) == 1 and "hydra.run.dir=" in errors[0] and "in use by another run" in errors[0]
    )
    assert f"pid {first.pid}" in errors[0]
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, err[-2000:]
    overrides = yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text())
    assert "dataset.limit=3" in overrides and "dataset.limit=1" not in overrides
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == len(
        (run_dir / "samples.jsonl").read_text().splitlines()
    )
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["dataset"]["limit"] == 3

    again = subprocess.run(  # the lock ends with its run: the folder can be reused afterwards
        _cmd(run_dir, cache, "dataset.limit=1"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-2000:]
