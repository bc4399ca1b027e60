"""The typos people actually make (issue 23, item 6): each exits 2 with one ``error:`` line naming
the key or value and the valid ones, closest match first, instead of Hydra's multi-line text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from memharness.eval.cli.hydra_errors import closest_first
from paths import ROOT

CASES = [
    (["memory=raptr"], "memory=raptr: no such memory config; choose one of: raptor, "),
    (
        ["memory=raptor", "memory.clustering.num_layer=3"],
        "memory.clustering.num_layer: not a setting of memory.clustering; its settings are: "
        "num_layers, ",
    ),
    (
        ["memory=raptor", "memory.summaries.prompt={context} x"],
        "memory.summaries.prompt: cannot read the value '{context} x'",
    ),
    (
        ["-m", "experiment=memtree_thresholds", "memory=raptor"],
        "memory.base_threshold (set by experiment=memtree_thresholds): not a setting of "
        "memory=raptor; its settings are: ",
    ),
]


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_typo_is_one_error_line_with_the_valid_choices(args, expected, tmp_path: Path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "run.py",
            *args,
            "llm=scripted",
            "embedder=hashing",
            f"hydra.run.dir={tmp_path / 'run'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            f"cache.path={tmp_path / 'calls.sqlite'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert expected in lines[0], lines[0]
    assert not (tmp_path / "run").exists()  # refused before a run folder was made


def test_the_closest_choice_comes_first():
    assert closest_first("raptr", ["cam", "memtree", "raptor", "graphrag"])[0] == "raptor"
    assert closest_first("num_layer", ["top_k", "num_layers", "seed"])[0] == "num_layers"
