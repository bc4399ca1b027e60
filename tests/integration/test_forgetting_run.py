"""experiment=forgetting through run.py (scripted chat, hashing embedder: plumbing in seconds) and
the report's "Letting go" sections over the sweep."""

from __future__ import annotations

import json
import subprocess
import sys

from processes import ROOT, run_py


def test_the_forgetting_sweep_leaks_nothing_and_the_report_sets_own_cost_beside_the_rebuild(
    tmp_path,
):
    proc = run_py(
        tmp_path,
        "experiment=forgetting",
        "memory=memtree,memorystream",
        "llm=scripted",
        "embedder=hashing",
        "eval.judge.calibration_max=0",
        multirun=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted(p.parent for p in (tmp_path / "runs").rglob("metrics.json"))
    assert len(runs) == 4  # 2 memories x (own, rebuild)
    for folder in runs:
        metrics = json.loads((folder / "metrics.json").read_text())["metrics"]
        assert metrics["forget_leak"]["n"] == 2 and metrics["forget_leak"]["mean"] == 0.0
        assert metrics["stale_retrieval"]["n"] == 2
        stats = json.loads((folder / "memory_stats.json").read_text())
        assert sum(len(s.get("forgets", [])) for s in stats.values()) == 2
        # never snapshotted: a loaded memory would be handed the forgotten units back
        assert {s["snapshot"]["why"] for s in stats.values()} == {"forgetting"}
    out = subprocess.run(
        [sys.executable, "-m", "memharness.eval.report.comparison", str(tmp_path / "runs")]
        + ["--out", str(tmp_path / "tables"), "--name", "forgetting"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    report = (tmp_path / "tables" / "forgetting.md").read_text()
    assert "## Letting go: forgetting and stale memory" in report
    cost = report.split("## Letting go: cost of forgetting")[1]
    rows = {
        tuple(c.strip() for c in line.split("|")[1:3]): line.split("|")
        for line in cost.splitlines()
        if line.startswith("| mem")
    }
    own = rows[("memorystream", "dataset.forget.method=own")]
    rebuild = rows[("memorystream", "dataset.forget.method=rebuild")]
    assert own[6].strip() == "0" and rebuild[6].strip() == "2"  # forget_rebuilds
    assert "forget_leak" not in report.split("## Scores")[1].split("\n## ")[0]
