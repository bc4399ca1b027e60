"""Gold errata in the tables: for a run whose questions carry ``categories["gold"]`` (an errata file
was given, data_prep/locomo.py ``apply_errata``), the questions listed as having a wrong gold, the
scores with and without them, and each category's ceiling: the share of its questions whose gold is
not listed as wrong, the best accuracy a system can reach if a right answer never matches a wrong
gold (the public LoCoMo audit's 99 wrong golds of 1,540 put the whole set's at about 93.6%).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memharness.eval.record import scores
from memharness.eval.report.paired import label
from memharness.eval.report.table_format import Section, number
from memharness.eval.report.tables import read_samples

WRONG = "listed_wrong"  # categories["gold"] of a question whose gold the errata list as wrong
METRICS = ("judge", "locomo_f1")  # the QA scores shown with and without the flagged questions
ALL = "all (in the means)"  # the row over the questions the means count (apart ones left out)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rows_of(samples: Sequence[dict[str, Any]], category_key: str = "category") -> list[dict]:
    """Per category (and over the questions in the means): n, listed wrong, ceiling, and each
    metric's mean with and without the listed questions."""
    parts: dict[str, list[dict[str, Any]]] = {ALL: []}
    for s in samples:
        cats = s.get("categories") or {}
        parts.setdefault(str(cats.get(category_key, "-")), []).append(s)
        if not cats.get("apart"):
            parts[ALL].append(s)
    out = []
    for part, members in parts.items():
        wrong = [s for s in members if (s.get("categories") or {}).get("gold") == WRONG]
        wrong_ids = {id(s) for s in wrong}  # the same records: membership by identity, not by value
        row = {
            "part": part,
            "n": len(members),
            "listed_wrong": len(wrong),
            "ceiling": 1 - len(wrong) / len(members) if members else None,
        }
        for m in METRICS:
            every = [scores.value(s, m) for s in members]
            kept = [scores.value(s, m) for s in members if id(s) not in wrong_ids]
            row[m] = _mean([v for v in every if v is not None])
            row[f"{m}_without"] = _mean([v for v in kept if v is not None])
        out.append(row)
    return out


def section(runs: Sequence[dict[str, Any]]) -> Section | None:
    """The errata section; None when no run's questions carry the flag."""
    rows, flagged = [], set()
    for run in runs:
        samples = read_samples(Path(run["folder"]))
        if not any("gold" in (s.get("categories") or {}) for s in samples):
            continue
        flagged.update(
            s["question_id"] for s in samples if (s.get("categories") or {}).get("gold") == WRONG
        )
        for r in rows_of(samples):
            cells = [label(run), run["dataset"], run.get("group", "-"), r["part"], str(r["n"])]
            cells += [str(r["listed_wrong"]), number(r["ceiling"])]
            cells += [number(r[m]) + " / " + number(r[f"{m}_without"]) for m in METRICS]
            rows.append(cells)
    if not rows:
        return None
    ids = sorted(flagged)
    return Section(
        title="Gold errata: flagged questions, scores with / without them, ceilings",
        header=["memory", "dataset", "set", "category", "n", "listed wrong", "ceiling"]
        + [f"{m} with / without" for m in METRICS],
        rows=rows,
        note=f"Questions whose gold the errata file lists as wrong ({len(ids)}): "
        + (", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "") or "none")
        + ". ceiling: the share of the category's questions whose gold is not listed as wrong "
        "(the best accuracy if a right answer never matches a wrong gold). 'with': the score over "
        "every question, as in the tables above; 'without': leaving the listed ones out.",
    )
