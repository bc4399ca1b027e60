"""The benchmark's own headlines, as its script prints them: for a run judged by a benchmark protocol
(metrics.json ``official_judge``: LongMemEval's per-type judge, CAM's ACC-L) the task-averaged
accuracy (the mean of the per-category accuracies) beside the overall one (over every question),
and the abstention accuracy apart. Many harnesses print only one of the two; they differ whenever
the categories differ in size."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.report.paired import label
from memharness.eval.report.table_format import Section, number


def section(runs: Sequence[dict[str, Any]]) -> Section | None:
    """One row per run with an official-judge summary; None when no run has one."""
    rows = []
    for run in runs:
        off = run.get("official_judge")
        if not off:
            continue
        abst = off.get("abstention") or {}
        rows.append(
            [
                label(run),
                run["dataset"],
                run.get("group", "-"),
                f"{off.get('protocol')} ({off.get('metric')})",
                number(off.get("task_averaged")),
                number(off.get("overall")),
                str(off.get("judged", "-")),
                "-" if not abst.get("n") else f"{number(abst.get('accuracy'))} (n={abst['n']})",
                ", ".join(off.get("categories_missing") or []) or "-",
            ]
        )
    if not rows:
        return None
    return Section(
        title="The benchmark's own headline (official QA metric)",
        header=[
            "memory",
            "dataset",
            "set",
            "protocol (metric)",
            "task-averaged",
            "overall",
            "judged",
            "abstention",
            "categories missing",
        ],
        rows=rows,
        note="task-averaged: the mean of the per-category accuracies (LongMemEval's headline); "
        "overall: over every judged question. They differ when categories differ in size; a "
        "category with no question is left out of the task average and named.",
    )
