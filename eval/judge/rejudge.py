"""Re-judging recorded answers: one run's predictions under one judge prompt variant and model.

Only judge calls are made (stage ``judge`` of the meter, every one through the call cache), never an
answer call: the predictions come from samples.jsonl. ``eval.judge.repeats=k`` asks each answer k
times at ``eval.judge.temperature`` (seeded) and keeps the majority, with the agreement reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.judge import variants
from memharness.eval.metrics.sensitivity import agreement, majority
from memharness.memsys.types import Question
from omegaconf import DictConfig


def question_of(sample: dict[str, Any]) -> Question:
    """The question as the judges read it, from what the sample recorded."""
    return Question(
        id=sample["question_id"],
        text=sample["question"],
        answers=tuple(sample["references"]),
        position=sample.get("position") or 0,
        options=tuple(sample["options"]) if sample.get("options") else None,
        gold_option=sample.get("gold_option"),
        categories=dict(sample.get("categories") or {}),
    )


def judged_samples(samples: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The samples a judge grades (scored, generative) and how many others were left out."""
    keep = [s for s in samples if s["status"] == "scored" and s.get("mode") == "generative"]
    return keep, len(samples) - len(keep)


def _empty(sample: dict[str, Any]) -> bool:
    return bool(sample.get("answer_empty")) or not (sample.get("prediction") or "").strip()


def repeats_of(cfg: DictConfig) -> tuple[int, float]:
    """``eval.judge.repeats`` (default 1) and ``eval.judge.temperature`` (default 0), checked."""
    repeats = int(cfg.eval.judge.get("repeats", 1) or 1)
    temperature = float(cfg.eval.judge.get("temperature", 0.0) or 0.0)
    if repeats < 1:
        raise variants.VariantError(f"eval.judge.repeats={repeats}: must be at least 1")
    if repeats > 1 and temperature <= 0:
        raise variants.VariantError(
            f"eval.judge.repeats={repeats} needs eval.judge.temperature > 0 (at temperature 0 the "
            "same request gives the same verdict k times)"
        )
    return repeats, temperature


def rejudge_run(
    samples: Sequence[dict[str, Any]],
    spec: dict[str, Any],
    llm: Any,
    cfg: DictConfig,
    desc: str,
) -> dict[str, Any]:
    """Every judged answer of one run under one resolved variant: its verdict per question id
    (the majority of the repeats; None = unparsed, failed or undecided) and the counts."""
    todo, skipped = judged_samples(samples)
    repeats, temperature = repeats_of(cfg)
    asked, fallback = [], 0
    for s in todo:
        if _empty(s):
            continue
        req, used_fallback = variants.request(question_of(s), s["prediction"], spec)
        fallback += used_fallback
        asked.append((s, variants.repeated(req, repeats, temperature)))
    flat = [r for _, reqs in asked for r in reqs]
    with llm.meter.stage("judge"):
        replies = llm.complete(flat, desc=desc) if flat else []
    # an empty answer is wrong and never judged, as in the run (eval/judge/loop.py)
    verdicts: dict[str, int | None] = {s["question_id"]: 0 for s in todo if _empty(s)}
    sets, failed, unparsed, at = [], 0, 0, 0
    for s, reqs in asked:
        got = []
        for comp in replies[at : at + len(reqs)]:
            v = variants.read_verdict(comp.text, spec) if comp.ok else None
            failed += not comp.ok
            unparsed += comp.ok and v is None
            got.append(v)
        at += len(reqs)
        sets.append(got)
        verdicts[s["question_id"]] = majority(got)
    decided = [v for v in verdicts.values() if v is not None]
    return {
        "verdicts": verdicts,
        "accuracy": sum(decided) / len(decided) if decided else None,
        "n": len(decided),
        "undecided": len(verdicts) - len(decided),
        "unparsed": unparsed,
        "failed": failed,
        "fallback": fallback,
        "not_judged": skipped,
        "repeats": repeats,
        "temperature": temperature,
        "agreement": agreement(sets) if repeats > 1 and sets else None,
    }


def judges_majority(per_judge: Sequence[dict[str, int | None]]) -> dict[str, Any]:
    """The verdict most judges give each answer, its accuracy, and the judges' agreement."""
    ids = sorted(set().union(*per_judge)) if per_judge else []
    sets = [[v.get(q) for v in per_judge] for q in ids]
    votes = {q: majority(vs) for q, vs in zip(ids, sets, strict=True)}
    decided = [v for v in votes.values() if v is not None]
    return {
        "accuracy": sum(decided) / len(decided) if decided else None,
        "n": len(decided),
        "agreement": agreement(sets) if sets else None,
    }
