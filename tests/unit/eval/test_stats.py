"""Paired statistics and agreement against values computed by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from memharness.eval.metrics.stats import (
    StatsError,
    cohen_kappa,
    is_binary,
    mcnemar,
    paired_bootstrap,
    paired_permutation,
    paired_test,
)


def test_mcnemar_exact_binomial_by_hand():
    # 5 items right only in a, 1 right only in b, 4 concordant: p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14/64
    a = [1, 1, 1, 1, 1, 0, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 0, 1, 1, 0, 1, 0]
    assert mcnemar(a, b) == {"b10": 5, "b01": 1, "p": pytest.approx(14 / 64)}
    assert mcnemar(a, a)["p"] == 1.0  # no discordant pair
    assert mcnemar([1] * 6, [0] * 6)["p"] == pytest.approx(2 / 64)
    with pytest.raises(StatsError, match="0/1"):
        mcnemar([0.5, 1], [1, 0])


def test_paired_bootstrap_matches_the_exact_resampling_distribution():
    a, b = [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]  # differences 1, 0, 1
    # By hand: a resample's mean is k/3 with k ~ Bin(3, 2/3): P = 1, 6, 12, 8 (/27) for k = 0..3, so the
    # CDF is 0.037, 0.259, 0.704, 1: the 10% quantile is 1/3 and the 90% quantile is 1.
    means = [np.mean(r) for r in itertools.product([1, 0, 1], repeat=3)]
    assert np.quantile(means, [0.1, 0.9]) == pytest.approx([1 / 3, 1.0])
    result = paired_bootstrap(a, b, resamples=20000, confidence=0.8, seed=1)
    assert result["diff"] == pytest.approx(2 / 3) and result["n"] == 3
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((1 / 3, 1.0))
    # resampling keeps pairs together: a shift shared by both runs does not widen the interval
    shifted = paired_bootstrap(
        [x + 5 * i for i, x in enumerate(a)], [5.0 * i for i in range(3)], 20000, 0.8, 1
    )
    assert (shifted["ci_low"], shifted["ci_high"]) == pytest.approx((1 / 3, 1.0))
    constant = paired_bootstrap([0.7, 0.5], [0.2, 0.0], resamples=100)
    assert (constant["ci_low"], constant["ci_high"]) == pytest.approx((0.5, 0.5))


def test_paired_permutation_exact_by_hand():
    # differences 1, 2, 3, 4: only all-plus and all-minus reach |mean| 2.5 -> p = 2/16
    assert paired_permutation([1, 2, 3, 4], [0, 0, 0, 0]) == {
        "p": pytest.approx(0.125),
        "exact": True,
    }
    # differences 1, -1: every sign pattern has |mean| 0 or 1 >= 0 -> p = 1
    assert paired_permutation([1, 0], [0, 1])["p"] == 1.0
    big = paired_permutation(np.arange(40) + 1.0, np.zeros(40), resamples=999, seed=0)
    assert big["exact"] is False and big["p"] == pytest.approx(1 / 1000)


def test_paired_test_picks_mcnemar_for_binary_outcomes():
    assert is_binary([0, 1.0, 1]) and not is_binary([0, 0.5])
    assert paired_test([1, 0, 1], [0, 0, 1])["test"] == "mcnemar"
    assert paired_test([0.2, 0.4], [0.1, 0.1])["test"] == "permutation"
    with pytest.raises(StatsError, match="equal-length"):
        paired_test([1, 0], [1])


def test_cohen_kappa_on_a_hand_made_table():
    # 20 both 1, 5 a-only, 10 b-only, 15 both 0: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, κ = 0.4
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    k = cohen_kappa(a, b)
    assert (
        k["kappa"] == pytest.approx(0.4) and k["agreement"] == pytest.approx(0.7) and k["n"] == 50
    )
    assert cohen_kappa([1, 0, 1], [1, 0, 1])["kappa"] == pytest.approx(1.0)
    assert cohen_kappa([1, 1], [1, 1])["kappa"] is None  # chance agreement 1: undefined
    assert cohen_kappa([1, 0], [0, 1])["kappa"] == pytest.approx(-1.0)
