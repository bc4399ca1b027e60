"""Claim verification (FABLES): reading a faithful / unfaithful verdict, and per-label F1.

FABLES (Kim et al., 2024) and CAM Table 2 report F1 separately for the positive label
(``faithful``: F1_P) and the negative one (``unfaithful``: F1_N), each over all claims of a run,
so the number is not a mean of per-claim values: every claim is coded by whether its gold label
and its predicted label are the scored label, and F1 is computed from the codes (and
bootstrapped over claims, as every other metric is over questions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from memharness.eval.metrics.lexical import bootstrap_ci

FAITHFUL, UNFAITHFUL = "faithful", "unfaithful"
LABELS = (FAITHFUL, UNFAITHFUL)
_NEGATIVE = re.compile(r"\b(unfaithful|not\s+faithful|unsupported|false)\b")
_POSITIVE = re.compile(r"\b(faithful|supported|true)\b")


def parse_verdict(reply: str) -> str | None:
    """``faithful`` / ``unfaithful`` from an answer; None when it names neither or both."""
    text = reply.strip().lower()
    negative = bool(_NEGATIVE.search(text))
    positive = bool(_POSITIVE.search(_NEGATIVE.sub(" ", text)))
    if negative == positive:
        return None
    return UNFAITHFUL if negative else FAITHFUL


UNPARSED_RULES = ("other_label", "neither")


def counted_label(gold: str, verdict: str | None, rule: str = "other_label") -> str | None:
    """The label a verdict counts as in F1_P / F1_N. An unparsed verdict (None) counts as the label
    that is not the gold under ``other_label`` (CAM's claim_verification.py: any reply other than the
    gold is a false negative of the gold label and a false positive of the other), or as neither
    label under ``neither`` (a false negative of the gold label only)."""
    if rule not in UNPARSED_RULES:
        raise ValueError(
            f"eval.answer.claim_unparsed must be one of {UNPARSED_RULES}, got {rule!r}"
        )
    if verdict is not None or rule == "neither":
        return verdict
    return UNFAITHFUL if gold == FAITHFUL else FAITHFUL


def code(gold: str, predicted: str | None, label: str) -> int:
    """2 * (gold is ``label``) + (prediction is ``label``): 3 = TP, 1 = FP, 2 = FN, 0 = TN."""
    return 2 * (gold == label) + (predicted == label)


def f1_of_codes(codes: Sequence[float] | np.ndarray) -> float:
    """F1 = 2TP / (2TP + FP + FN) of coded claims; 0 when the label is neither gold nor predicted."""
    arr = np.asarray(codes)
    tp, fp, fn = int((arr == 3).sum()), int((arr == 1).sum()), int((arr == 2).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def label_f1(
    pairs: Sequence[tuple[str, str | None]],
    label: str,
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, float] | None:
    """F1 of ``label`` over (gold, predicted) pairs with its bootstrap CI and n (the claims);
    None when no claim has the label as gold or prediction (F1 undefined)."""
    codes = [code(g, p, label) for g, p in pairs]
    if not any(c for c in codes):
        return None
    low, high = bootstrap_ci(codes, resamples, confidence, seed, statistic=f1_of_codes)
    return {"mean": f1_of_codes(codes), "n": len(codes), "ci_low": low, "ci_high": high}
