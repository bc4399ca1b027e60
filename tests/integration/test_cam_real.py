"""CAM end to end with the embedded models (SmolLM2-135M via llama.cpp, MiniLM): `run.py` on the sample."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow


def test_run_py_builds_a_cam_with_overlapping_memberships_and_shows_them(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    # the defaults (θ = α = 0.5, App. E grid values): with the code's 0.6 / 0.6 MiniLM links none of
    # the sample's short texts
    cmd = [
        sys.executable,
        "run.py",
        "memory=cam",
        "dataset=sample",
        "dataset.limit=2",
        "llm=local_tiny",
        "embedder=local",
        f"hydra.run.dir={out}",
        "progress=false",
        "memory.summaries.max_tokens=48",
        "memory.selection.max_tokens=24",
        "eval.judge.calibration_max=0",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["memory"] == "cam" and metrics["counts"]["questions"] == 2
    assert metrics["counts"]["scored"] + metrics["counts"].get("answer_failed", 0) == 2
    overlapping = 0
    for folder in sorted((out / "memory").iterdir()):
        doc = json.loads((folder / "hierarchy.json").read_text())
        parents: dict[int, int] = {}
        for node in doc["nodes"]:
            for c in node["children"]:
                parents[c] = parents.get(c, 0) + 1
        multi = [v for v, n in parents.items() if n >= 2]
        assert all(doc["nodes"][v]["units"] for v in multi if doc["nodes"][v]["level"] == 0)
        html = (folder / "view.html").read_text()
        data = json.loads(
            re.search(r"<script type='application/json' id='data'>(.*?)</script>", html, re.S)
            .group(1)
            .replace("<\\/", "</")
        )
        assert sorted(v for v, n in enumerate(data["nodes"]) if len(n["p"]) >= 2) == sorted(multi)
        overlapping += len(multi)
    assert overlapping > 0  # some node feeds two or more summaries (CAM's flexible assimilation)
    stats = json.loads((out / "memory_stats.json").read_text())
    assert sum(s["structure"]["multi_parent_nodes"] for s in stats.values()) == overlapping
    assert sum(s["construction"]["summary_calls"] for s in stats.values()) > 0
    assert all(
        s["prune_and_grow"]["questions"] == 1 for s in stats.values()
    )  # one kept question per episode
