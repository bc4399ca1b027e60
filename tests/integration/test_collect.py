"""eval.collect: every run as one tidy DataFrame, runs of one memory kept apart by their settings."""

from __future__ import annotations

import json

from memharness.eval.report.collect import collect
from memharness.eval.run.runner import run


def test_collect_is_one_row_per_run_and_metric_with_differing_settings_as_columns(
    make_cfg, tmp_path
):
    runs = tmp_path / "runs"
    for name, extra in (("a", "memory.top_k=1"), ("b", "memory.top_k=3"), ("c", None)):
        overrides = ["memory=memtree" if extra else "memory=full_context", "dataset.limit=3"] + (
            [extra] if extra else []
        )
        run(make_cfg(*overrides), runs / name)
    df = collect([runs])
    assert set(df["memory"]) == {"memtree", "full_context"}
    memtree = df[(df["memory"] == "memtree") & (df["kind"] == "score")]
    # two memtree runs that differ only in top_k stay apart, with top_k as its own column
    assert "memory.top_k" in df.columns and set(memtree["memory.top_k"]) == {"1", "3"}
    f1 = memtree[memtree["metric"] == "f1"].set_index("memory.top_k")
    for name, k in (("a", "1"), ("b", "3")):
        m = json.loads((runs / name / "metrics.json").read_text())["metrics"]["f1"]
        assert (
            f1.loc[k, "mean"] == m["mean"]
            and f1.loc[k, "ci_low"] == m["ci_low"]
            and f1.loc[k, "n"] == m["n"]
        )
    # one row per (run, metric): no duplicates
    assert not df.duplicated(["folder", "kind", "metric"]).any()
    assert set(df["kind"]) >= {"score", "cost"}
    pivot = df[df["kind"] == "score"].pivot_table(index="folder", columns="metric", values="mean")
    assert len(pivot) == 3
