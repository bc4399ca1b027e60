"""experiment=traversal_coupling end to end with test doubles, and the coupling report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_cli import ROOT, run_py


@pytest.mark.slow  # over 8 s: the slow tier (CI runs both tiers)
@pytest.mark.doubles
def test_coupling_sweep_builds_once_and_reports_every_traversal_beside_ss_theta(tmp_path):
    # the experiment sweeps every hierarchical memory; two of them here keep the test quick
    proc = run_py(
        tmp_path,
        "experiment=traversal_coupling",
        "memory=memtree,cam",
        "dataset.limit=2",
        "llm=fake_logprob",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
        multirun=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    every = sorted(p.parent for p in (tmp_path / "runs").rglob("metrics.json"))
    assert len(every) == 6 and {f.relative_to(tmp_path / "runs").parts[0] for f in every} == {
        "memtree-sample",
        "cam-sample",
    }
    folders = [f for f in every if f.relative_to(tmp_path / "runs").parts[0] == "memtree-sample"]
    configs = [json.loads((f / "metrics.json").read_text()) for f in folders]
    traversals = sorted(
        next(o for o in m["overrides"] if o.startswith("memory.traversal=")) for m in configs
    )
    assert traversals == [
        "memory.traversal=collapsed",
        "memory.traversal=collapsed_expand",
        "memory.traversal=top_down",
    ]
    structures = [
        {ep: s["structure"] for ep, s in json.loads((f / "memory_stats.json").read_text()).items()}
        for f in folders
    ]
    assert structures[0] == structures[1] == structures[2]  # the same memory under three traversals
    assert sorted(m["calls"]["build"]["calls"] for m in configs)[:2] == [
        0,
        0,
    ]  # later runs: the cache built it
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memharness.eval.report.coupling",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "t"),
            "--name",
            "c",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    rows = [
        r for r in json.loads((tmp_path / "t" / "c.json").read_text()) if r["memory"] == "memtree"
    ]
    assert {r["traversal"] for r in rows} == {"collapsed", "collapsed_expand", "top_down"}
    assert all(r["ss_status"] == "ok" and r["ss_groups"] > 0 for r in rows)
    assert all(
        abs(r["ss_theta"] - 0.75) < 1e-9 for r in rows
    )  # the fake scores 1 - 0.25 / 1 for every group
    md = (tmp_path / "t" / "c.md").read_text()
    line = next(l for l in md.splitlines() if l.startswith("| sample | memtree"))
    assert line.count("(n=") == 3 and "0.750 (" in line
    assert any(l.startswith("| sample | cam") for l in md.splitlines())
