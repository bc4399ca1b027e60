"""What kind of number each metric is, as the tables' headers say it: a QA judge's verdict, a
benchmark's official QA metric, a lexical overlap, a retrieval-only number (which never measures an
answer, so never sits in the QA score section), a cost or a latency.

Derived from each registry entry (its scorer and kind, eval/metrics/registry.py); the official
lexical metrics are named here because their scorer is the lexical one.
"""

from __future__ import annotations

from typing import Literal

from memharness.eval.metrics import registry

Label = Literal[
    "QA judge", "official QA metric", "lexical overlap", "retrieval-only", "cost", "latency"
]
LABELS: tuple[Label, ...] = (
    "QA judge",
    "official QA metric",
    "lexical overlap",
    "retrieval-only",
    "cost",
    "latency",
)
# scored from the answer like any lexical metric, but the benchmark's own metric (LoCoMo's code)
OFFICIAL_LEXICAL = (
    "locomo_f1",
    "locomo_adversarial",
    "mab_accuracy",
    "membench_accuracy",
    "membench_unparsed",
)
# scorers whose verdict is a benchmark's own rule: its judge protocol, the gold option, the gold label
OFFICIAL_SCORERS = ("official_judge", "choice", "claim")


def kind_label(name: str) -> Label | None:
    """The kind of metric key ``name`` (``judge:needs_memory`` is the judge's); None when no
    registry entry declares it."""
    entry = registry.lookup(name)
    if entry is None:
        return "latency" if "latency" in name or name.endswith("_s") else None
    if entry.scorer in ("judge", "judge_audit", "closed_book", "forget_judge"):
        return "QA judge"
    if entry.scorer in OFFICIAL_SCORERS or entry.name in OFFICIAL_LEXICAL:
        return "official QA metric"
    if entry.kind == "overlap" or (entry.kind, entry.scorer) == ("accuracy", "forgetting"):
        return "lexical overlap"  # the forgetting scorer reads the answer's words
    if entry.kind == "retrieval":
        return "retrieval-only"
    return "latency" if entry.kind == "latency" or "latency" in entry.name else "cost"


def header(name: str) -> str:
    """A table header: the metric key and its kind (``judge (QA judge)``)."""
    kind = kind_label(name)
    return f"{name} ({kind})" if kind else name
