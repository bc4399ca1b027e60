"""Statistics for comparing runs and judges: paired bootstrap, McNemar, paired permutation, Cohen's κ.

Pure functions over plain sequences; every random procedure takes a seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class StatsError(Exception):
    """A statistic was asked of data that cannot give it (no pairs, mismatched lengths)."""


def _pairs(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise StatsError(
            f"paired data need two equal-length 1-d sequences, got {x.shape} and {y.shape}"
        )
    if x.size == 0:
        raise StatsError("no pairs to compare")
    return x, y


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is 0 or 1 (a judge verdict, exact match, MC correctness)."""
    return all(v in (0.0, 1.0) for v in values)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """Mean difference ``a - b`` over paired items and its percentile bootstrap CI.

    The items (questions) are resampled with replacement, each keeping its pair, so the interval
    reflects the question-to-question correlation of the two runs.
    """
    x, y = _pairs(a, b)
    diff = x - y
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(resamples, diff.size))
    means = diff[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return {
        "diff": float(diff.mean()),
        "ci_low": float(low),
        "ci_high": float(high),
        "n": int(diff.size),
    }


def mcnemar(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Exact (binomial) two-sided McNemar test for paired 0/1 outcomes.

    ``b10`` counts items right in ``a`` and wrong in ``b``, ``b01`` the reverse; under the null
    each discordant item is a fair coin, so p = min(1, 2 P(X <= min(b10, b01))), X ~ Bin(b10 + b01, 1/2).
    """
    x, y = _pairs(a, b)
    if not (is_binary(x) and is_binary(y)):
        raise StatsError("McNemar needs 0/1 outcomes")
    b10 = int(np.sum((x == 1) & (y == 0)))
    b01 = int(np.sum((x == 0) & (y == 1)))
    n = b10 + b01
    tail = sum(math.comb(n, i) for i in range(min(b10, b01) + 1)) / 2**n if n else 1.0
    return {"b10": b10, "b01": b01, "p": min(1.0, 2 * tail)}


def paired_permutation(
    a: Sequence[float], b: Sequence[float], resamples: int = 10000, seed: int = 0
) -> dict[str, float]:
    """Two-sided sign-flip permutation test of the mean paired difference.

    Exact (all 2^n sign patterns) for n <= 16, else ``resamples`` seeded random flips with the
    add-one correction p = (hits + 1) / (resamples + 1).
    """
    x, y = _pairs(a, b)
    diff = x - y
    observed = abs(diff.mean())
    tol = 1e-12
    if diff.size <= 16:
        signs = np.array(np.meshgrid(*[[1.0, -1.0]] * diff.size)).reshape(diff.size, -1).T
        stats = np.abs((signs * diff).mean(axis=1))
        return {"p": float(np.mean(stats >= observed - tol)), "exact": True}
    rng = np.random.default_rng(seed)
    signs = rng.choice([1.0, -1.0], size=(resamples, diff.size))
    hits = int(np.sum(np.abs((signs * diff).mean(axis=1)) >= observed - tol))
    return {"p": (hits + 1) / (resamples + 1), "exact": False}


def paired_test(
    a: Sequence[float], b: Sequence[float], resamples: int = 10000, seed: int = 0
) -> dict[str, float]:
    """McNemar when both sides are 0/1, else the paired permutation test; names the test used."""
    if is_binary(a) and is_binary(b):
        return {"test": "mcnemar", **mcnemar(a, b)}
    return {"test": "permutation", **paired_permutation(a, b, resamples, seed)}


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> dict[str, float | None]:
    """Cohen's κ of two raters over the same items (any labels), with observed agreement.

    κ = (p_o - p_e) / (1 - p_e). When chance agreement is already 1 (both raters gave one and the
    same label to every item) κ is undefined and returned as None.
    """
    if len(a) != len(b):
        raise StatsError(f"κ needs ratings of the same items, got {len(a)} and {len(b)}")
    if not a:
        raise StatsError("κ over no items")
    n = len(a)
    labels = sorted(set(a) | set(b))
    observed = sum(x == y for x, y in zip(a, b, strict=False)) / n
    expected = sum((list(a).count(lab) / n) * (list(b).count(lab) / n) for lab in labels)
    kappa = None if math.isclose(expected, 1.0) else (observed - expected) / (1 - expected)
    return {"kappa": kappa, "agreement": observed, "n": n}
