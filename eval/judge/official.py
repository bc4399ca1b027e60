"""A benchmark's own judge protocol, run beside the harness's audited judge (``judge.official``).

A dataset with an official protocol (conf/judge/official/<dataset>.yaml, merged into
``judge.official`` by conf/config.yaml) has every generative answer judged twice by the ``judge=``
model: by the harness prompt (``eval.judge``, metric ``judge``, audited) and by the benchmark's
own prompt, picked by the question's category (``category``: LongMemEval's question type). An id
containing ``abstention_id_contains`` gets the abstention prompt instead. The verdict is
LongMemEval's rule, ``'yes' in reply.lower()``: a reply is never unparsed (``constrained: true``
limits it to yes / no). The per-question verdict is the metric ``official_judge``; ``summary``
gives the accuracies as the benchmark prints them (``print_qa_metrics.py``): per type,
task-averaged (the mean of the per-type accuracies), overall, and abstention accuracy apart
(abstention items also count in their type). An empty answer is wrong and not judged, as with
the harness judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question
from omegaconf import DictConfig, OmegaConf

METRIC = "official_judge"


def settings(cfg: DictConfig) -> dict[str, Any] | None:
    """``judge.official`` as a plain dict, or None when the run's judge has no official protocol."""
    judge = cfg.get("judge")
    if not isinstance(judge, DictConfig) or judge.get("official") is None:
        return None
    return OmegaConf.to_container(judge.official, resolve=True)


def is_abstention(question_id: str, proto: Mapping[str, Any]) -> bool:
    mark = proto.get("abstention_id_contains")
    return bool(mark) and mark in question_id


def prompt_for(question: Question, prediction: str, proto: Mapping[str, Any]) -> str:
    """The protocol's prompt for one answer; an unknown category is refused, naming it."""
    if is_abstention(question.id, proto) and proto.get("abstention_prompt"):
        template = proto["abstention_prompt"]
    else:
        key = question.categories.get(proto["category"])
        if key not in proto["prompts"]:
            raise ValueError(
                f"judge.official ({proto['name']}): question {question.id} has "
                f"{proto['category']}={key!r}, which has no prompt (known: {sorted(proto['prompts'])})"
            )
        template = proto["prompts"][key]
    reference = " / ".join(question.answers)
    return template.format(question=question.text, reference=reference, prediction=prediction)


def request(question: Question, prediction: str, proto: Mapping[str, Any]) -> ChatRequest:
    choices = ("yes", "no") if proto.get("constrained") else None
    return ChatRequest.user(
        prompt_for(question, prediction, proto),
        max_tokens=int(proto["max_tokens"]),
        choices=choices,
    )


def verdict(reply: str) -> float:
    """LongMemEval's rule: correct when the reply contains 'yes', whatever else it says."""
    return float("yes" in reply.lower())


def judge_all(
    pending: Sequence[tuple[Question, Any, dict]], cfg: DictConfig, services: Any, judges: Any
) -> None:
    """Judge every scored generative answer with the official protocol (stage ``judge``)."""
    proto = settings(cfg)
    if proto is None:
        return
    todo = [
        (q, r) for q, _, r in pending if r["status"] == "scored" and r.get("mode") == "generative"
    ]
    for _, r in todo:
        if r.get("answer_empty"):  # wrong, never judged
            r["metrics"][METRIC] = 0.0
            r["official_judge_status"] = "answer_empty"
    todo = [(q, r) for q, r in todo if not r.get("answer_empty")]
    requests = [request(q, r["prediction"], proto) for q, r in todo]
    with services.meter.stage("judge"):
        completions = judges.primary.complete(requests, desc=f"{proto['name']} judge")
    for (_, record), comp in zip(todo, completions, strict=False):
        record["official_judge_reply"] = comp.text
        if not comp.ok:
            record.update(official_judge_status="judge_failed")
            continue
        record["official_judge_status"] = "parsed"
        record["metrics"][METRIC] = verdict(comp.text)


def accuracies(samples: Sequence[Mapping[str, Any]], proto: Mapping[str, Any]) -> dict[str, Any]:
    """Accuracies as the benchmark reports them, over the questions with a verdict. Task-averaged is
    the mean over the categories present (the official script, over all six types, gives NaN when a
    type is missing; ``categories_missing`` names them)."""
    by_type: dict[str, list[float]] = {str(k): [] for k in proto["prompts"]}
    abstention: list[float] = []
    for s in samples:
        value = s["metrics"].get(METRIC)
        if value is None:
            continue
        by_type.setdefault(str(s["categories"].get(proto["category"])), []).append(value)
        if is_abstention(str(s["question_id"]), proto):
            abstention.append(value)
    present = {k: v for k, v in by_type.items() if v}
    every = [x for v in present.values() for x in v]
    return {
        "per_category": {k: {"accuracy": sum(v) / len(v), "n": len(v)} for k, v in present.items()},
        "task_averaged": sum(sum(v) / len(v) for v in present.values()) / len(present)
        if present
        else None,
        "overall": sum(every) / len(every) if every else None,
        "abstention": {
            "accuracy": sum(abstention) / len(abstention) if abstention else None,
            "n": len(abstention),
        },
        "categories_missing": sorted(k for k, v in by_type.items() if not v),
        "judged": len(every),
    }


def summary(
    samples: Sequence[Mapping[str, Any]], cfg: DictConfig, judges: Any
) -> dict[str, Any] | None:
    """metrics.json ``official_judge``: the protocol, its judge model and its accuracies."""
    proto = settings(cfg)
    if proto is None or not bool(cfg.eval.judge.enabled):
        return None
    statuses = [s.get("official_judge_status") for s in samples]
    return {
        "protocol": proto["name"],
        "model": judges.primary.model_id if judges is not None else None,
        "verdict": "'yes' in reply.lower()",
        "category": proto["category"],
        "questions": len(samples),
        "not_judged": sum(st is None for st in statuses),  # failed earlier (counted in counts)
        "judge_failed": statuses.count("judge_failed"),
        **accuracies(samples, proto),
    }
