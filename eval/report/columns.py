"""The numbers a table row reads from one run record beside its metrics: the intrinsic cost of the
method and of the evaluation, and the judge's reliability (eval/report/tables.py)."""

from __future__ import annotations

from typing import Any

METHOD_STAGES = (
    "build",
    "retrieve",
    "answer",
)  # the method's own cost; judge and audit are evaluation


def cost_columns(run: dict[str, Any]) -> dict[str, float | None]:
    """Intrinsic cost: the method's (build, retrieve, answer) and the evaluation's (judge, audit)."""
    led = run.get("intrinsic")
    if not led:
        return {}
    method = [led.get(s, {}) for s in METHOD_STAGES]
    evaluation = [led.get(s, {}) for s in ("judge", "closed_book", "audit")]
    n = max(1, run["counts"]["questions"])

    def total(stages: list[dict], *keys: str) -> float:
        return float(sum(s.get(k, 0) for s in stages for k in keys))

    tokens = total(method, "prompt_tokens", "completion_tokens")
    return {
        "build_calls": total(method[:1], "calls"),
        "build_tokens": total(method[:1], "prompt_tokens", "completion_tokens"),
        "embed_texts": total(method, "embed_texts"),
        "method_calls": total(method, "calls"),
        "method_tokens": tokens,
        "tokens_per_question": tokens / n,
        "method_usd": total(method, "cost_usd"),
        "method_llm_s": total(method, "call_s"),
        "eval_calls": total(evaluation, "calls"),
        "eval_usd": total(evaluation, "cost_usd"),
    }


def judge_columns(run: dict[str, Any]) -> dict[str, float | None]:
    """The judge's reliability as numbers (replaces the old judge_check string)."""
    rel = run.get("judge_reliability") or {}
    can = rel.get("canaries") or {}
    out = {
        "judge_accepts_reference": (can.get("accepts_reference") or {}).get("rate"),
        "judge_far_other": (can.get("false_accept_other") or {}).get("rate"),
        "judge_far_wrong": (can.get("false_accept_wrong") or {}).get("rate"),
    }
    for key, part in (
        ("judge_kappa_lenient", "strict_vs_lenient"),
        ("judge_kappa_judge2", "judge_vs_judge2"),
    ):
        if rel.get(
            part
        ):  # the column exists when the comparison ran; None = κ undefined (constant verdicts)
            out[key] = rel[part].get("kappa")
    return out
