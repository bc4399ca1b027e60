from __future__ import annotations

import numpy as np
import pytest
from memharness.eval.judge.prompt import parse_judge
from memharness.eval.metrics.lexical import (
    MetricError,
    bootstrap_ci,
    exact_match,
    normalize_answer,
    parse_choice,
    rouge,
    summarize,
    token_f1,
)
from memharness.eval.metrics.registry import answer_scores


def test_squad_normalisation():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("An apple, a pear") == "apple pear"


def test_exact_match():
    assert exact_match("the Eiffel tower.", "Eiffel Tower") == 1.0
    assert exact_match("Eiffel", "Eiffel Tower") == 0.0


def test_token_f1_hand_computed():
    # prediction tokens: [paris, france]; reference: [paris] -> P=1/2, R=1 -> F1=2/3
    assert token_f1("Paris, France", "Paris") == pytest.approx(2 / 3)
    # pred [red, blue, green], ref [blue, green, yellow, black]: common 2 -> P=2/3, R=1/2 -> F1=4/7
    assert token_f1("red blue green", "blue green yellow black") == pytest.approx(4 / 7)
    assert token_f1("cat", "dog") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("the", "dog") == 0.0  # "the" normalises away


def test_rouge_hand_computed():
    # reference "the cat sat on the mat" (6 tokens), prediction "the cat on the mat" (5):
    # LCS = 5 -> recall 5/6, precision 1, F = 2*(5/6)/(1+5/6) = 10/11
    s = rouge("the cat on the mat", "the cat sat on the mat")
    assert s["rouge_l_recall"] == pytest.approx(5 / 6)
    assert s["rouge_l_f"] == pytest.approx(10 / 11)
    # unigram overlap is also 5 (the x2, cat, on, mat) -> same F
    assert s["rouge_1_f"] == pytest.approx(10 / 11)
    # order matters for ROUGE-L but not ROUGE-1: "mat the on cat" vs "cat on mat the"
    s2 = rouge("mat on cat", "cat on mat")
    assert s2["rouge_1_f"] == pytest.approx(1.0)
    assert s2["rouge_l_recall"] == pytest.approx(1 / 3)


def test_lexical_scores_take_best_reference():
    s = answer_scores("Lisbon", ["Porto", "Lisbon"])
    assert s["exact_match"] == 1.0 and s["f1"] == 1.0
    with pytest.raises(MetricError):
        answer_scores("x", [])


@pytest.mark.parametrize(
    "reply,expected",
    [
        ("1", 1),
        ("0", 0),
        (" 1\n", 1),
        ("'0'", 0),
        ("1.", 1),
        ("yes", None),
        ("1 because it matches", None),
        ("", None),
        ("10", None),
        ("0 1", None),
    ],
)
def test_judge_parser(reply, expected):
    assert parse_judge(reply) == expected


@pytest.mark.parametrize(
    "reply,expected",
    [
        ("B", 1),
        ("(C) the third", 2),
        ("A.", 0),
        ("answer: D", 3),
        ("A or B", None),
        ("E", None),
        ("", None),
    ],
)
def test_choice_parser(reply, expected):
    assert parse_choice(reply, 4) == expected


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    values = np.r_[np.ones(30), np.zeros(70)]
    low, high = bootstrap_ci(values, resamples=2000, seed=1)
    assert low < 0.3 < high
    # binomial standard error sqrt(.3*.7/100) = 0.0458: the 95% interval spans about +-1.96 SE
    assert 0.15 < high - low < 0.22
    assert bootstrap_ci(values, resamples=2000, seed=1) == (low, high)
    assert bootstrap_ci([0.5] * 10) == (0.5, 0.5)
    with pytest.raises(MetricError):
        bootstrap_ci([])
    s = summarize([1.0, 0.0, 1.0, 1.0], 500, 0.95, 0)
    assert s["mean"] == 0.75 and s["n"] == 4 and s["ci_low"] <= 0.75 <= s["ci_high"]
