"""Generated files (memharness synth) through whole runs with the scripted doubles: the printed
overrides load them, a stratified subset is asked, evidence recall is scored on the planted turns,
and a second run with another retrieval setting loads the first run's snapshots."""

from __future__ import annotations

import json

from memharness.data_prep.synth import cli
from memharness.eval.run.runner import run


def test_a_generated_longmemeval_file_runs_end_to_end_and_a_second_run_loads_its_snapshots(
    make_cfg, tmp_path
):
    summary = cli.synthesize("longmemeval_s", tmp_path / "data", 10, 2_000, seed=2)
    args = [*summary["overrides"], "memory=memorystream", "dataset.limit=5"]
    metrics = run(make_cfg(*args), tmp_path / "a")
    assert metrics["counts"]["questions"] == 5 == metrics["counts"]["scored"]
    kept = {s for s, n in metrics["data"]["subset"]["strata"].items() if n["kept"]}
    assert metrics["data"]["subset"]["stratify_by"] == "stratum" and len(kept) > 1
    assert metrics["metrics"]["evidence_recall"]["n"] >= 1
    file = summary["files"]["longmemeval_s_cleaned.json"]["sha256"]
    assert file in metrics["data"]["files"].values()
    run(make_cfg(*args, "dataset.top_k=3"), tmp_path / "b")
    stats = json.loads((tmp_path / "b" / "memory_stats.json").read_text())
    assert {e["snapshot"]["action"] for e in stats.values()} == {"loaded"}
