"""Turn per-sample records into metrics.json aggregates: means, bootstrap CIs, breakdowns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from memharness.eval.metrics import claims, registry
from memharness.eval.metrics.lexical import summarize
from memharness.eval.record import scores

# A question category: questions that carry it (e.g. LoCoMo's adversarial category) are summarised
# under metrics.json "metrics_apart" by its value and left out of the run's means ("metrics").
APART_KEY = "apart"


def split_apart(
    samples: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """(samples of the run's means, {apart value: samples reported apart})."""
    main: list[dict[str, Any]] = []
    apart: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        value = s["categories"].get(APART_KEY)
        (apart[str(value)] if value else main).append(s)
    return main, dict(sorted(apart.items()))


def metric_values(samples: Sequence[dict[str, Any]], metric: str) -> list[float]:
    """Values of ``metric`` over the samples that have it (failed / unparsed ones do not)."""
    found = (scores.value(s, metric) for s in samples)
    return [v for v in found if v is not None]


def claim_pairs(samples: Sequence[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(gold label, counted label) of every claim-verification answer: the label the scorer counted
    an unparsed verdict as (``eval.answer.claim_unparsed``), or None (wrong for either label) in
    records scored before it was recorded. Failed questions have no answer and are counted elsewhere."""
    return [
        (s["references"][0], _counted(s))
        for s in samples
        if s.get("mode") == "claim_verification" and s["status"] == "scored"
    ]


def _counted(sample: dict[str, Any]) -> str | None:
    counted = scores.detail(sample, "claim_accuracy", "counted_label")
    return (
        counted
        if counted is not None
        else scores.detail(sample, "claim_accuracy", "predicted_label")
    )


def summarize_all(
    samples: Sequence[dict[str, Any]],
    metrics: Sequence[str],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, dict[str, float]]:
    out = {}
    for metric in metrics:
        entry = registry.lookup(metric)
        if entry is not None and entry.aggregate == "label_f1" and entry.label:
            pairs = claim_pairs(samples)
            summary = claims.label_f1(pairs, entry.label, resamples, confidence, seed)
            if pairs and summary is not None:
                out[metric] = summary
            continue
        values = metric_values(samples, metric)
        if values:
            out[metric] = summarize(values, resamples, confidence, seed)
            if entry is not None and entry.aggregate == "percentiles":
                p50, p95 = np.percentile(values, [50, 95])
                out[metric].update(p50=float(p50), p95=float(p95))
    return out


def position_bucket(position: int | None, edges: Sequence[int]) -> str | None:
    """'0-40' style label of the bucket holding ``position``; the last bucket is open-ended."""
    if position is None:
        return None
    for lo, hi in zip(edges, edges[1:], strict=False):
        if lo <= position < hi:
            return f"{lo}-{hi}"
    return f"{edges[-1]}+" if position >= edges[-1] else None


def breakdowns(
    samples: Sequence[dict[str, Any]],
    metrics: Sequence[str],
    edges: Sequence[int],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Per category label (every key in ``categories``) and per evidence-position bucket."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        for key, value in s["categories"].items():
            groups[key][str(value)].append(s)
        bucket = position_bucket(s.get("evidence_position"), edges)
        if bucket is not None:
            groups["evidence_position"][bucket].append(s)
    return {
        key: {
            value: {
                "n": len(members),
                **summarize_all(members, metrics, resamples, confidence, seed),
            }
            for value, members in sorted(by_value.items())
        }
        for key, by_value in groups.items()
    }


def failure_counts(samples: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts = {
        "questions": len(samples),
        "scored": 0,
        "build_failed": 0,
        "retrieve_failed": 0,
        "answer_failed": 0,
        "deadline_exceeded": 0,
        "budget_exceeded": 0,
        "judge_parsed": 0,  # answers the judge gave a verdict on
        "judge_failed": 0,
        "judge_unparsed": 0,
        "mc_unparsed": 0,
        "claim_unparsed": 0,  # claim-verification answers naming neither label
        "prompt_cut": 0,
        "answer_empty": 0,
        "degraded": 0,
        "partial": 0,
        "judge_injection": 0,
    }
    for s in samples:
        counts["scored" if s["status"] == "scored" else s["status"]] += 1
        counts["answer_empty"] += bool(s.get("answer_empty"))  # scored wrong, never judged
        # answered from a memory built without some LLM outputs
        counts["degraded"] += bool(scores.memory_flag(s, "degraded"))
        # answered without some of this question's own LLM outputs
        counts["partial"] += bool(scores.memory_flag(s, "partial"))
        # flagged, still judged
        counts["judge_injection"] += bool(scores.detail(s, "judge", "injection"))
        judge_status = scores.status(s, "judge")
        if judge_status in ("parsed", "judge_failed", "judge_unparsed"):
            counts["judge_" + judge_status.removeprefix("judge_")] += 1
        if scores.status(s, "mc_accuracy") == "mc_unparsed":
            counts["mc_unparsed"] += 1
        if scores.status(s, "claim_accuracy") == "claim_unparsed":
            counts["claim_unparsed"] += 1
        if s.get("prompt_tokens_cut"):
            counts["prompt_cut"] += 1
    return counts
