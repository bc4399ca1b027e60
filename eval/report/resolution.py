"""What a table can tell apart: per question set (and per category) the minimum detectable
difference of the headline accuracy at the table's n, and the ranking with each adjacent pair the
paired test cannot separate marked ``≈`` (``>`` where it can, at p < 0.05).

Reads the runs the tables read (metrics.json means and breakdowns, per-question values); the MDD is
eval/metrics/power.py's, the paired test eval/metrics/stats.py's (exact McNemar for 0/1 verdicts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.metrics.power import ALPHA, POWER, min_detectable_difference
from memharness.eval.metrics.stats import paired_test
from memharness.eval.report.paired import label, paired_values
from memharness.eval.report.table_format import Section, number

METRIC = "judge"  # the headline accuracy whose resolution is shown


def _mean_n(summary: dict[str, Any] | None) -> tuple[float, int] | None:
    if not summary or summary.get("mean") is None:
        return None
    return float(summary["mean"]), int(summary.get("n") or 0)


def set_rows(group: Sequence[dict[str, Any]], metric: str = METRIC) -> list[dict[str, Any]]:
    """The MDD of ``metric`` for the whole set and each category: n is the fewest questions any
    row scored, p the rows' pooled mean."""
    parts: dict[str, list[tuple[float, int]]] = {}
    for run in group:
        whole = _mean_n((run.get("metrics") or {}).get(metric))
        if whole:
            parts.setdefault("all", []).append(whole)
        for key, values in sorted((run.get("breakdowns") or {}).items()):
            for value, summary in sorted(values.items()):
                got = _mean_n((summary or {}).get(metric))
                if got:
                    parts.setdefault(f"{key}={value}", []).append(got)
    rows = []
    for part, got in parts.items():
        n = min(k for _, k in got)
        p = sum(m for m, _ in got) / len(got)
        rows.append({"part": part, "p": p, **min_detectable_difference(n, p)})
    return rows


def ranking(
    group: Sequence[dict[str, Any]], metric: str = METRIC, alpha: float = ALPHA
) -> list[dict[str, Any]]:
    """Rows by mean, best first; each after the first with the paired test against the row above
    (``separated``: p < alpha; None when the two share no question with the metric)."""
    scored = [r for r in group if _mean_n((r.get("metrics") or {}).get(metric))]
    scored.sort(key=lambda r: (-r["metrics"][metric]["mean"], label(r)))
    out = []
    for i, run in enumerate(scored):
        entry = {"row": label(run), "mean": run["metrics"][metric]["mean"], "p": None}
        if i:
            a, b = paired_values(scored[i - 1], run, metric)
            if a:
                entry["p"] = paired_test(a, b)["p"]
        entry["separated"] = None if entry["p"] is None else entry["p"] < alpha
        out.append(entry)
    return out


def ranking_text(entries: Sequence[dict[str, Any]]) -> str:
    """``a 0.667 ≈ b 0.500 > c 0.167``: ``≈`` the paired test cannot separate the two, ``>`` it can,
    ``?`` no shared question."""
    text = ""
    for e in entries:
        if text:
            text += {True: " > ", False: " ≈ ", None: " ? "}[e["separated"]]
        text += f"{e['row']} {number(e['mean'])}"
    return text


def section(runs: Sequence[dict[str, Any]], metric: str = METRIC) -> Section | None:
    """The section under the scores: MDD per set and category, the marked ranking per set."""
    rows, notes = [], []
    for group_id in sorted({r["group"] for r in runs}):
        group = [r for r in runs if r["group"] == group_id]
        for part in set_rows(group, metric):
            mdd = number(part["mdd"])
            rows.append(
                [
                    group_id,
                    group[0]["dataset"],
                    part["part"],
                    str(part["n"]),
                    number(part["p"]),
                    mdd,
                ]
            )
        if len(group) > 1:
            notes.append(f"Set {group_id}: {ranking_text(ranking(group, metric))}.")
    if not rows:
        return None
    return Section(
        title=f"What this table can tell apart ({metric})",
        header=["set", "dataset", "questions", "n", "mean", "MDD"],
        rows=rows,
        note=(
            f"MDD: the smallest difference in {metric} accuracy between two rows that a two-sided "
            f"test at alpha {ALPHA} detects with power {POWER} at this n (normal approximation, "
            "two independent proportions around the rows' pooled mean; 0.5 when that is 0 or 1). "
            "A gap below it is within chance. Ranking: '>' the paired test separates the two "
            "adjacent rows (p < 0.05), '≈' it cannot. " + " ".join(notes)
        ),
    )
