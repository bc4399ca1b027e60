"""Paired comparisons of runs against a baseline row over the same question ids.

Every system answers the same questions, so a difference between two runs is measured question by
question: the mean paired difference with its paired-bootstrap CI, and a paired test (exact
McNemar for 0/1 metrics such as judge verdicts, a sign-flip permutation test for continuous ones).
Only questions where both runs have the metric count (failures are excluded from both): each
comparison reports the pairs it used and the questions of the two runs (``n_pairs`` of
``questions``), so a lost question shows. Rows are compared only with a baseline in their comparable group (same
dataset, question set and judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from memharness.eval.metrics import registry
from memharness.eval.metrics.stats import paired_bootstrap, paired_test

DEFAULT_METRICS = registry.names(headline=True)


def label(run: dict[str, Any]) -> str:
    """A row's short name: the memory and its distinguishing settings."""
    return run["memory"] + (f" [{run['setting']}]" if run.get("setting") else "")


def matches_baseline(run: dict[str, Any], baseline: str) -> bool:
    """``baseline`` names a memory (``full_context``) or a row label (``memtree [memory.top_k=3]``)."""
    return baseline in (run["memory"], label(run))


def pick_baseline(group: Sequence[dict[str, Any]], baseline: str) -> dict[str, Any] | None:
    """The baseline row of a group; of several, the one without extra settings, then the first."""
    candidates = [r for r in group if matches_baseline(r, baseline)]
    if not candidates:
        return None
    return sorted(candidates, key=lambda r: (bool(r.get("setting")), r["folder"]))[0]


def paired_values(
    run: dict[str, Any], base: dict[str, Any], metric: str
) -> tuple[list[float], list[float]]:
    """Values of ``metric`` for the questions both runs scored, in question-id order."""
    a, b = run["per_question"], base["per_question"]
    ids = sorted(
        q
        for q in a.keys() & b.keys()
        if a[q].get(metric) is not None and b[q].get(metric) is not None
    )
    return [float(a[q][metric]) for q in ids], [float(b[q][metric]) for q in ids]


def compare(
    run: dict[str, Any],
    base: dict[str, Any],
    metric: str,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | None:
    """One paired comparison, or None when the runs share no question with the metric."""
    a, b = paired_values(run, base, metric)
    if not a:
        return None
    boot = paired_bootstrap(a, b, resamples, confidence, seed)
    test = paired_test(a, b, seed=seed)
    return {
        "metric": metric,
        "n_pairs": boot["n"],
        "questions": len(run["per_question"].keys() | base["per_question"].keys()),
        "mean": sum(a) / len(a),
        "baseline_mean": sum(b) / len(b),
        "diff": boot["diff"],
        "ci_low": boot["ci_low"],
        "ci_high": boot["ci_high"],
        "test": test["test"],
        "p": test["p"],
    }


def paired_frame(
    runs: Sequence[dict[str, Any]],
    baseline: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every row against its group's baseline, one line per (row, metric)."""
    rows = []
    for group_id in sorted({r["group"] for r in runs}):
        group = [r for r in runs if r["group"] == group_id]
        base = pick_baseline(group, baseline)
        if base is None:
            continue
        for run in sorted(group, key=label):
            if run is base:
                continue
            for metric in metrics:
                result = compare(run, base, metric, resamples, confidence, seed)
                if result is not None:
                    rows.append(
                        {
                            "set": group_id,
                            "dataset": run["dataset"],
                            "row": label(run),
                            "baseline": label(base),
                            **result,
                        }
                    )
    columns = [
        "set",
        "dataset",
        "row",
        "baseline",
        "metric",
        "n_pairs",
        "questions",
        "mean",
        "baseline_mean",
        "diff",
        "ci_low",
        "ci_high",
        "test",
        "p",
    ]
    return pd.DataFrame(rows, columns=columns)
