"""Head-to-head of every two runs on the same question set: win / tie / loss on the verdict metric,
overall and per question category, each with the paired test of ``eval/metrics/stats.py``
(exact McNemar for 0/1 verdicts, the sign-flip permutation test otherwise). Computed when the page
is written, since a static page cannot run the test; the page looks the pair up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.metrics.stats import paired_test


def tally(a: Sequence[float], b: Sequence[float], seed: int = 0) -> dict[str, Any]:
    """Wins, ties and losses of A against B over paired values, with the paired test's p."""
    wins = sum(x > y for x, y in zip(a, b, strict=True))
    losses = sum(x < y for x, y in zip(a, b, strict=True))
    test = paired_test(a, b, seed=seed) if a else {"test": None, "p": None}
    return {
        "n": len(a),
        "win": wins,
        "tie": len(a) - wins - losses,
        "loss": losses,
        "test": test["test"],
        "p": test["p"],
    }


def pair(
    a: dict[int, dict[str, Any]],
    b: dict[int, dict[str, Any]],
    metric: str,
    categories: Sequence[Sequence[str]],
) -> dict[str, Any] | None:
    """A against B over the questions both scored on ``metric``; None when they share none."""
    shared = sorted(
        i
        for i in a.keys() & b.keys()
        if a[i].get("v", {}).get(metric) is not None and b[i].get("v", {}).get(metric) is not None
    )
    if not shared:
        return None
    values = {i: (float(a[i]["v"][metric]), float(b[i]["v"][metric])) for i in shared}
    out = tally([values[i][0] for i in shared], [values[i][1] for i in shared])
    by_cat: dict[str, list[int]] = {}
    for i in shared:
        for cat in categories[i]:
            by_cat.setdefault(cat, []).append(i)
    out["categories"] = {
        cat: tally([values[i][0] for i in ids], [values[i][1] for i in ids])
        for cat, ids in sorted(by_cat.items())
    }
    out["differ"] = [i for i in shared if values[i][0] != values[i][1]]
    return out


def head_to_head(
    runs: Sequence[dict[str, Any]],
    cells: Sequence[dict[int, dict[str, Any]]],
    metric: str,
    categories: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """Every ordered-once pair of runs on one dataset, keyed ``"i,j"`` (i < j: A = run i)."""
    out = {}
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            if runs[i]["dataset"] != runs[j]["dataset"]:
                continue
            result = pair(cells[i], cells[j], metric, categories)
            if result is not None:
                out[f"{i},{j}"] = result
    return out
