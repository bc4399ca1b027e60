"""A run-format-2 sample as format 3: its flat scorer fields and ``metrics`` become ``scores``,
the memory system's own fields become ``memory``; everything else stays as it was written.
``memharness rescore`` converts with this, then re-runs the scorers (``eval/cli/rescore.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memharness.eval.record.scores import put

# format-2 flat field -> (the metric whose score details hold it, the detail's name)
DETAILS = {
    "judge_reply": ("judge", "reply"),
    "judge_status": ("judge", "status"),
    "judge_error": ("judge", "error"),
    "judge_injection": ("judge", "injection"),
    "predicted_option": ("mc_accuracy", "predicted_option"),
    "mc_status": ("mc_accuracy", "status"),
    "predicted_label": ("claim_accuracy", "predicted_label"),
    "claim_status": ("claim_accuracy", "status"),
    "judge_lenient_status": ("judge_lenient", "status"),
    "judge2_status": ("judge2", "status"),
    "official_judge_reply": (None, "reply"),  # None: the official protocol's own metric
    "official_judge_status": (None, "status"),
}
MEMORY_FIELDS = ("answered_by", "degraded", "partial", "agent_steps")
CLOSED_BOOK = "closed_book_accuracy"  # eval/run/closed_book.py METRIC (record/ may not import run/)


def sample_2_to_3(
    old: dict[str, Any], kind_of: Callable[[str], str], official_metric: str
) -> dict[str, Any]:
    """The format-3 sample of format-2 ``old``; ``kind_of(metric)`` names a metric's scorer,
    ``official_metric`` is the metric the run's official judge wrote (``official_judge`` or
    ``acc_l``). A status without a value (a failed judge call) becomes a score with a null value."""
    new = {k: v for k, v in old.items() if k not in DETAILS and k not in MEMORY_FIELDS}
    values = new.pop("metrics", {}) or {}
    closed_book = new.pop("closed_book", None)
    details: dict[str, dict[str, Any]] = {}
    for field, (metric, key) in DETAILS.items():
        if old.get(field) is not None:
            details.setdefault(metric or official_metric, {})[key] = old[field]
    new["scores"] = {}
    for name in [*values, *(m for m in details if m not in values)]:
        put(new, name, values.get(name), kind_of(name), **details.get(name, {}))
    if closed_book is not None:
        rest = {k: v for k, v in closed_book.items() if k != "correct"}
        put(new, CLOSED_BOOK, closed_book.get("correct"), kind_of(CLOSED_BOOK), **rest)
    new["memory"] = {k: old[k] for k in MEMORY_FIELDS if old.get(k) is not None}
    return new
