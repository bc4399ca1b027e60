"""How far a ranking of systems depends on the judge: bands, Kendall's tau, flipped pairs, and the
majority and agreement of repeated verdicts.

Pure functions over plain mappings (system -> accuracy) and verdict lists; ``memharness rejudge``
(eval/cli/rejudge.py) feeds them the re-judged accuracies of recorded predictions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations

from memharness.eval.metrics.stats import StatsError


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the same systems (ties allowed); None when either
    scoring is constant (every pair tied) or fewer than two systems are scored by both."""
    shared = sorted(a.keys() & b.keys())
    concordant = discordant = tied_a = tied_b = 0
    for x, y in combinations(shared, 2):
        sa, sb = _sign(a[x] - a[y]), _sign(b[x] - b[y])
        if sa == 0 and sb == 0:
            continue
        if sa == 0:
            tied_a += 1
        elif sb == 0:
            tied_b += 1
        elif sa == sb:
            concordant += 1
        else:
            discordant += 1
    denom = math.sqrt((concordant + discordant + tied_a) * (concordant + discordant + tied_b))
    return None if denom == 0 else (concordant - discordant) / denom


def flipped_pairs(a: Mapping[str, float], b: Mapping[str, float]) -> list[tuple[str, str]]:
    """The pairs ordered one way under ``a`` and the other way under ``b`` (a tie on either side is
    not a flip), each as (ahead under ``a``, ahead under ``b``), sorted."""
    shared = sorted(a.keys() & b.keys())
    out = []
    for x, y in combinations(shared, 2):
        sa, sb = _sign(a[x] - a[y]), _sign(b[x] - b[y])
        if sa and sb and sa != sb:
            out.append((x, y) if sa > 0 else (y, x))
    return sorted(out)


def band(values: Sequence[float | None]) -> tuple[float, float] | None:
    """(min, max) of the values that exist; None when none does."""
    present = [v for v in values if v is not None]
    return (min(present), max(present)) if present else None


def majority(verdicts: Sequence[int | None]) -> int | None:
    """The verdict most of the parsed ones give; None on a tie or when none parsed (counted by the
    caller as undecided, never guessed)."""
    parsed = [v for v in verdicts if v is not None]
    ones = sum(parsed)
    zeros = len(parsed) - ones
    if ones == zeros:
        return None
    return int(ones > zeros)


def agreement(verdict_sets: Sequence[Sequence[int | None]]) -> dict[str, float | int | None]:
    """Over answers judged k times: the share whose k verdicts are unanimous (every one parsed and
    equal) and the mean share of verdicts that side with the answer's majority."""
    if not verdict_sets:
        raise StatsError("agreement over no answers")
    unanimous = sum(
        1 for vs in verdict_sets if None not in vs and len(set(vs)) == 1 and len(vs) > 0
    )
    with_majority = []
    for vs in verdict_sets:
        m = majority(vs)
        with_majority.append(0.0 if m is None else sum(v == m for v in vs) / len(vs))
    n = len(verdict_sets)
    return {
        "n": n,
        "unanimous": unanimous / n,
        "with_majority": sum(with_majority) / n,
        "undecided": sum(majority(vs) is None for vs in verdict_sets),
    }
