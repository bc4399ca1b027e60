"""LoCoMo's official QA score (Maharana et al., ACL 2024; ``task_eval/evaluation.py`` of
snap-research/locomo @9228632), re-implemented to give the same numbers.

- Normalisation: commas removed, lower case, punctuation removed, the words "a", "an", "the" and
  "and" removed, whitespace collapsed. Tokens are Porter-stemmed (NLTK's ``PorterStemmer`` in its
  default mode, as the official code), then scored by token F1 (no common token: 0, even when both
  sides are empty).
- Category 1 (multi-hop): prediction and gold are split on commas; the score is the mean over the
  gold parts of the best F1 against any prediction part.
- Categories 2 and 4: plain F1. Category 3: plain F1 against the gold cut at its first ";".
- Category 5 (adversarial): 1 when the answer contains "no information available" or "not
  mentioned" (case-insensitive), else 0; the gold is not read.

The rule is chosen by the question's raw LoCoMo category number (``categories["locomo_category"]``,
set by ``data_prep/locomo.py``), never by its label, so relabelling the categories (the other map in
circulation) cannot change a score. Questions of other datasets carry no number and get no value.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

from memharness.memsys.types import Question

CATEGORY_KEY = "locomo_category"  # the question category holding the raw LoCoMo number
ADVERSARIAL_MARKERS = ("no information available", "not mentioned")
_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def normalize(text: str) -> str:
    """The official ``normalize_answer``: commas out, lower case, punctuation out, a/an/the/and out."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def stemmed_tokens(text: str) -> list[str]:
    return [_stem(w) for w in normalize(text).split()]


def f1(prediction: str, gold: str) -> float:
    """Token F1 over normalised, Porter-stemmed tokens (the official ``f1_score``)."""
    pred, ref = stemmed_tokens(prediction), stemmed_tokens(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1: both sides split on commas; mean over gold parts of the best part F1 (``f1``)."""
    parts = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1(p, g) for p in parts) for g in golds) / len(golds)


def adversarial(prediction: str) -> float:
    """Category 5: 1 when the answer says the conversation does not hold the answer."""
    lowered = prediction.lower()
    return float(any(marker in lowered for marker in ADVERSARIAL_MARKERS))


def category(question: Question) -> int | None:
    """The raw LoCoMo category number of ``question`` (None for other datasets)."""
    raw = question.categories.get(CATEGORY_KEY)
    return int(raw) if raw not in (None, "") else None


def score(prediction: str, gold: str, category_number: int) -> float:
    """The official per-question score of ``prediction`` against ``gold`` for one category."""
    if category_number == 5:
        return adversarial(prediction)
    if category_number == 1:
        return multi_answer_f1(prediction, gold)
    if category_number == 3:
        gold = gold.split(";")[0].strip()
    if category_number in (2, 3, 4):
        return f1(prediction, gold)
    raise ValueError(f"LoCoMo category must be 1-5, got {category_number}")


def locomo_f1(prediction: str, question: Question) -> float | None:
    """``locomo_f1``: the official F1 of categories 1-4 (best over the references); None otherwise."""
    number = category(question)
    if number is None or number == 5 or not question.answers:
        return None
    return max(score(prediction, gold, number) for gold in question.answers)


def locomo_adversarial(prediction: str, question: Question) -> float | None:
    """``locomo_adversarial``: the official category-5 rule; None for every other question."""
    return adversarial(prediction) if category(question) == 5 else None
