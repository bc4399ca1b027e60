"""Does a table's judge column tell the systems apart? One sentence per dataset, under the table.

A judge accuracy ranking means something only when the judge discriminates (the audit's canaries:
it accepts the reference itself and rejects another question's reference) and the systems'
bootstrap 95% CIs do not all overlap. The note says which pairs are separated, or why the column
cannot separate them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CHECK_MIN = (
    0.9  # accepts_reference or 1 - far_other below this: the judge's verdicts are not trusted
)


def _label(run: dict[str, Any], setting_of: Any) -> str:
    extra = setting_of(run)
    return f"{run['memory']}" + (f" ({extra})" if extra else "")


def _canary_rates(run: dict[str, Any]) -> tuple[float, float] | None:
    """(accepts_reference, rejects_other) from the run's judge audit; None when not measured."""
    can = (run.get("judge_reliability") or {}).get("canaries") or {}
    accepts, other = can.get("accepts_reference"), can.get("false_accept_other")
    if not accepts or not other or accepts.get("rate") is None or other.get("rate") is None:
        return None
    return accepts["rate"], 1 - other["rate"]


def judge_flag(run: dict[str, Any]) -> str | None:
    """Why a judged run's verdicts are not trusted (its canaries missing or below ``CHECK_MIN``),
    None when they are or the run has no judge column."""
    if not run.get("metrics", {}).get("judge"):
        return None
    rates = _canary_rates(run)
    if rates is None:
        return "judge audit not measured"
    if min(rates) < CHECK_MIN:
        return f"judge canaries {rates[0]:.2f} / {rates[1]:.2f} below {CHECK_MIN}"
    return None


def weak_judges(runs: Sequence[dict[str, Any]], setting_of: Any) -> list[str]:
    """Runs whose canaries are missing or below ``CHECK_MIN`` on either side."""
    weak = []
    for r in runs:
        rates = _canary_rates(r)
        if rates is None or min(rates) < CHECK_MIN:
            shown = f"{rates[0]:.2f}/{rates[1]:.2f}" if rates else "not measured"
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
                f"{dataset}: the judge column cannot rank these systems: accepts_reference / "
                f"rejects another question's reference is below {CHECK_MIN} for "
                f"{', '.join(weak)}, so its verdicts are not trusted."
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
