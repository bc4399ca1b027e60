"""Does a table's judge column tell the systems apart? One sentence per dataset, under the table.

A judge accuracy ranking means something only when the judge discriminates (its ``judge_check``
reads high on both sides) and the systems' bootstrap 95% CIs do not all overlap. The note says
which pairs are separated, or why the column cannot separate them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CHECK_MIN = 0.9  # judge_check below this on either side: the judge's verdicts are not trusted


def _label(run: dict[str, Any], setting_of: Any) -> str:
    extra = setting_of(run)
    return f"{run['memory']}" + (f" ({extra})" if extra else "")


def weak_judges(runs: Sequence[dict[str, Any]], setting_of: Any) -> list[str]:
    """Runs whose judge calibration is missing or below ``CHECK_MIN`` on either side."""
    weak = []
    for r in runs:
        cal = r.get("judge_calibration")
        if (
            not cal
            or cal["says_1_to_reference"] < CHECK_MIN
            or cal["says_0_to_other_reference"] < CHECK_MIN
        ):
            shown = (
                f"{cal['says_1_to_reference']:.2f}/{cal['says_0_to_other_reference']:.2f}"
                if cal
                else "not measured"
            )
            weak.append(f"{_label(r, setting_of)} ({shown})")
    return weak


def separated_pairs(runs: Sequence[dict[str, Any]], setting_of: Any) -> list[str]:
    """'a > b' for every pair whose judge CIs are disjoint."""
    pairs = []
    for a in runs:
        for b in runs:
            ja, jb = a["metrics"]["judge"], b["metrics"]["judge"]
            if ja["ci_low"] > jb["ci_high"]:
                pairs.append(f"{_label(a, setting_of)} > {_label(b, setting_of)}")
    return pairs


def judge_notes(runs: Sequence[dict[str, Any]], setting_of: Any = lambda r: "") -> list[str]:
    """One note per dataset with at least two judged runs."""
    notes = []
    for dataset in sorted({r["dataset"] for r in runs}):
        judged = [r for r in runs if r["dataset"] == dataset and r["metrics"].get("judge")]
        if len(judged) < 2:
            continue
        n = sorted({r["metrics"]["judge"]["n"] for r in judged})
        weak = weak_judges(judged, setting_of)
        pairs = separated_pairs(judged, setting_of)
        if weak:
            notes.append(
                f"{dataset}: the judge column cannot rank these systems: judge_check is below "
                f"{CHECK_MIN} for {', '.join(weak)}, so its verdicts are not trusted."
            )
        elif pairs:
            notes.append(
                f"{dataset}: the judge separates {'; '.join(pairs)} (disjoint 95% CIs, n = "
                f"{'/'.join(map(str, n))}); other differences are within the CIs."
            )
        else:
            notes.append(
                f"{dataset}: the judge column does not separate the systems: every pair of 95% CIs "
                f"overlaps at n = {'/'.join(map(str, n))} questions, so the differences may be chance "
                "(more questions narrow the CIs)."
            )
    return notes
