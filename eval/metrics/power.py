"""What a table's n can tell apart: the minimum detectable difference of an accuracy.

The normal approximation for two proportions compared at the same n (two-sided test at ``alpha``,
power ``power``): MDD = (z(1 - alpha/2) + z(power)) * sqrt(2 p (1 - p) / n), with p the accuracy the
rows share (their pooled mean). It treats the two rows as independent samples, so it is an upper
bound for the paired comparison of two systems on the same questions (whose correlation only helps);
at p = 0 or 1 (no spread observed) the worst case p = 0.5 is used instead, said so by ``p_used``.
"""

from __future__ import annotations

import math

from scipy.stats import norm

ALPHA = 0.05  # two-sided significance level
POWER = 0.8  # probability of detecting a true difference of the MDD


def min_detectable_difference(
    n: int, p: float, alpha: float = ALPHA, power: float = POWER
) -> dict[str, float | int | None]:
    """The MDD of an accuracy at ``n`` questions around accuracy ``p`` (module docstring); None for
    n = 0. ``p_used`` is the accuracy the formula used."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"an accuracy is in [0, 1], got {p}")
    p_used = p if 0.0 < p < 1.0 else 0.5
    if n <= 0:
        return {"n": n, "p_used": p_used, "mdd": None}
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    return {"n": n, "p_used": p_used, "mdd": float(z * math.sqrt(2 * p_used * (1 - p_used) / n))}
