"""Lexical metrics, the multiple-choice reply parser and bootstrap confidence intervals.

ROUGE-L recall is MemTree's lexical metric; ROUGE-1 / ROUGE-L F are CAM's; exact
match and token F1 use SQuAD normalisation. With several references a sample
takes its best score over them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

# Lexical metrics: higher is better for every one of them.
LEXICAL = ("rouge_l_recall", "rouge_1_f", "rouge_l_f", "exact_match", "f1")


class MetricError(Exception):
    """A metric could not be computed; raised, never printed and skipped."""


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, drop punctuation, articles and extra whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)


def rouge(prediction: str, reference: str) -> dict[str, float]:
    """ROUGE-L recall and ROUGE-1 / ROUGE-L F-measure (rouge-score, Porter stemmer)."""
    return dict(_rouge(prediction, reference))


@lru_cache(maxsize=4096)  # the registry asks once per ROUGE variant
def _rouge(prediction: str, reference: str) -> tuple[tuple[str, float], ...]:
    scores = _scorer().score(reference, prediction)  # rouge-score takes (target, prediction)
    return (
        ("rouge_l_recall", scores["rougeL"].recall),
        ("rouge_1_f", scores["rouge1"].fmeasure),
        ("rouge_l_f", scores["rougeL"].fmeasure),
    )


def parse_choice(reply: str, n_options: int) -> int | None:
    """Read an option letter (A, B, ...) from a multiple-choice reply; None if absent or ambiguous."""
    letters = "ABCDEFGHIJ"[:n_options]
    text = re.sub(
        r"^\s*answer\s*:\s*", "", reply, flags=re.IGNORECASE
    ).strip()  # "Answer: (C) ..." formats
    if re.match(rf"^\(?[{letters}]\)?\s*(?:or|and|/|,)\s*\(?[{letters}]\b", text):
        return None  # "A or B" names two options
    match = re.match(rf"^\(?([{letters}])\)?(?:[\s.:)]|$)", text)
    if match:
        return letters.index(match.group(1))
    found = set(re.findall(rf"\b([{letters}])\b", text))
    return letters.index(found.pop()) if len(found) == 1 else None


def bootstrap_ci(
    values: Sequence[float],
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: Callable[[np.ndarray], float] = np.mean,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over ``values``."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise MetricError("bootstrap over no values")
    if not 0 < confidence < 1:
        raise MetricError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    stats = (
        np.apply_along_axis(statistic, 1, data[idx])
        if statistic is not np.mean
        else data[idx].mean(axis=1)
    )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return float(low), float(high)


def summarize(
    values: Sequence[float], resamples: int, confidence: float, seed: int
) -> dict[str, float]:
    """Mean, n and bootstrap CI of one metric."""
    low, high = bootstrap_ci(values, resamples, confidence, seed)
    return {"mean": float(np.mean(values)), "n": len(values), "ci_low": low, "ci_high": high}
