"""Forgetting and stale-memory scores (issue 45, docs/forgetting.md), for questions whose gold
carries an ``Update`` (the generated forgetting suite, ``data_prep/forgetting.py``).

Retrieval (every question whose retrieval ran; provenance of derived items included, since every
item carries the source units it was made of):
- ``forget_leak`` (deletions): 1 when a retrieved item's provenance holds a forgotten unit. Target 0.
- ``stale_retrieval`` (corrections): 1 when a superseded unit is retrieved and the current one is
  not, or ranks below it.

Answer (answered questions; a lexical reading, not the judge: deterministic and free, and the
judged variants are future work):
- ``forget_answer_leak`` (deletions): 1 when the answer contains at least half of the forgotten
  answer's words (normalised as SQuAD does).
- ``forget_abstain`` (deletions): 1 when the answer says it does not know (``ABSTAIN`` phrases).
- ``stale_answer`` (corrections): 1 when the answer contains the superseded value (as above) and
  not the current one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memharness.eval.metrics.lexical import normalize_answer
from memharness.eval.record.scores import put
from memharness.memsys.types import Question, RetrievedItem

# What an answer that declines says (lower case, after SQuAD normalisation of the answer).
ABSTAIN = re.compile(
    r"\b(do not know|dont know|not know|no information|not mentioned|cannot answer|cannot tell|"
    r"not sure|unknown|deleted|not available|no record|not provided)\b"
)


def states(answer: str, value: str) -> bool:
    """Whether ``answer`` contains at least half of the words of ``value`` (normalised)."""
    words = set(normalize_answer(value).split())
    said = set(normalize_answer(answer).split())
    return bool(words) and len(words & said) >= len(words) / 2


def first_rank(items: Sequence[RetrievedItem], units: Sequence[str]) -> int | None:
    """Rank of the first item whose provenance holds one of ``units`` (None: none does)."""
    wanted = set(units)
    return next((i for i, it in enumerate(items) if wanted & set(it.source_unit_ids)), None)


def retrieval_scores(question: Question, items: Sequence[RetrievedItem]) -> dict[str, float]:
    """``forget_leak`` or ``stale_retrieval`` of one question (empty without an update)."""
    u = question.update
    if u is None:
        return {}
    if u.kind == "deletion":
        return {"forget_leak": float(first_rank(items, u.forgotten_units) is not None)}
    old, new = first_rank(items, u.superseded_units), first_rank(items, u.current_units)
    return {"stale_retrieval": float(old is not None and (new is None or new > old))}


def answer_scores(question: Question, answer: str) -> dict[str, float]:
    """``forget_answer_leak`` and ``forget_abstain``, or ``stale_answer``, of one answer."""
    u = question.update
    if u is None:
        return {}
    if u.kind == "deletion":
        return {
            "forget_answer_leak": float(states(answer, u.superseded_answer)),
            "forget_abstain": float(bool(ABSTAIN.search(normalize_answer(answer)))),
        }
    if not u.superseded_answer:  # the gold gives no old value (LongMemEval's knowledge updates)
        return {}
    current = question.answers[0] if question.answers else ""
    stale = states(answer, u.superseded_answer) and not states(answer, current)
    return {"stale_answer": float(stale)}


class Forgetting:
    """The scorer of the five metrics above (registry entries with ``scorer="forgetting"``)."""

    name = "forgetting"

    def score(self, pending: Sequence[tuple[Question, Sequence[Any], dict]], ctx: Any) -> None:
        for question, items, record in pending:
            if question.update is None or record["status"] in ("build_failed", "retrieve_failed"):
                continue
            scores = retrieval_scores(question, items)
            if record["status"] == "scored":
                scores.update(answer_scores(question, record["prediction"]))
            for metric, value in scores.items():
                put(record, metric, value, self.name)
