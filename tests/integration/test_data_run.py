"""`python run.py dataset=<name> dataset.loader.path=<fixture>` end to end for each of the five datasets."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from paths import ROOT

FIX = ROOT / "tests" / "fixtures"
CASES = {
    "msc": (FIX / "msc" / "msc_self_instruct.jsonl", {"msc"}),
    "msc_e": (FIX / "msc_e", {"msc_e"}),
    "quality": (FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev", {"easy", "hard"}),
    "multihop": (FIX / "multihop", {"inference", "comparison", "temporal"}),
    "novelqa": (FIX / "novelqa", {"times", "character", "span", "meaning"}),
}


@pytest.mark.slow
@pytest.mark.doubles
@pytest.mark.parametrize("name", sorted(CASES))
def test_run_py_end_to_end_on_fixture(name, tmp_path):
    path, labels = CASES[name]
    env = {
        **os.environ,
        "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"),
        "MEMHARNESS_DATA": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT / "tests"),
    }
    cmd = [
        sys.executable,
        "run.py",
        f"hydra.run.dir={tmp_path / 'run'}",
        "progress=false",
        "memory=full_context",
        f"dataset={name}",
        f"dataset.loader.path={path}",
        "dataset.limit=2",
        "llm=fake",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 == metrics["counts"]["questions"]
    data = metrics["data"]
    assert (
        data["name"] == name and data["files"] and all(len(h) == 64 for h in data["files"].values())
    )
    assert data["revision"]
    seen = {v for s in samples for v in (s.get("categories") or {}).values()}
    assert seen & labels, (seen, labels)
