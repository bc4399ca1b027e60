"""Every run as one tidy pandas DataFrame: one row per run × metric, settings as columns.

    from memharness.eval.report.collect import collect
    df = collect(["results/sweeps"])          # or run folders, sweep folders, parents of them
    df.pivot_table(index="memory", columns="metric", values="mean")

Columns: the row identity of the tables (memory, setting, dataset, llm, embedder, judge, n, seed,
qset = checksum of the question ids, set = the comparable group), ``kind`` (score | cost | judge |
count), ``metric``, ``mean``, ``ci_low``, ``ci_high``, ``n``, the run ``folder``, and one column per
resolved setting that differs among the runs (``memory.top_k``, ``dataset.budget_tokens``, ...), so
runs that share a memory name stay apart and a sweep's parameters can be grouped on directly.
Reads only run folders (metrics.json, samples.jsonl, config.yaml), like the tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd
from memharness.eval.record.read import load_runs
from memharness.eval.report import tables
from memharness.eval.report.comparison import DEFAULT_METRICS, latest_per_config


def _differing(runs: list[dict]) -> list[str]:
    """Resolved setting keys whose value differs between at least two runs (reporting knobs left out)."""
    keys = sorted({k for r in runs if r.get("config") for k in r["config"]})
    keep = []
    for key in keys:
        if any(fnmatch(key, pat) for pat in tables.IGNORED_SETTINGS):
            continue
        values = {repr((r.get("config") or {}).get(key)) for r in runs}
        if len(values) > 1:
            keep.append(key)
    return keep


def collect(
    paths: Sequence[str | Path], latest_only: bool = False, metrics: Sequence[str] | None = None
) -> pd.DataFrame:
    """All runs under ``paths`` as a long DataFrame (one row per run × metric)."""
    runs = [tables.attach(run) for run in load_runs(paths)]  # broken runs left out, named
    if latest_only:
        runs = latest_per_config(runs)
    tables.identify(runs)
    tables.assign_groups(runs)
    chosen = list(metrics) if metrics else tables.present_metrics(runs, DEFAULT_METRICS)
    long = tables.long_frame(tables.wide_frame(runs, chosen), chosen)
    keys = _differing(runs)
    by_folder = {
        r["folder"]: {
            k: tables._show(r["config"][k]) if r.get("config") and k in r["config"] else None
            for k in keys
        }
        for r in runs
    }
    settings = pd.DataFrame([{"folder": f, **v} for f, v in by_folder.items()])
    if keys:
        long = long.merge(settings, on="folder", how="left")
    return long.reset_index(drop=True)
