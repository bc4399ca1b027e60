"""A benchmark's own judge protocol, run beside the harness's audited judge (``judge.official``).

A dataset with an official protocol (conf/judge/official/<dataset>.yaml, merged into
``judge.official`` by conf/config.yaml) has every generative answer judged twice by the ``judge=``
model: by the harness prompt (``eval.judge``, metric ``judge``, audited) and by the benchmark's
own prompt, picked by the question's category (``category``: LongMemEval's question type; null:
the one prompt ``prompts.default``). An id containing ``abstention_id_contains`` gets the
abstention prompt instead. The verdict rule (``verdict``) is the benchmark's: LongMemEval's
``'yes' in reply.lower()`` (``contains_yes``, never unparsed) or CAM's ACC-L
``reply.strip().lower() == 'yes'`` (``exact_yes``: anything else is 0, and replies that are
neither yes nor no are counted as ``unclear``). With ``per_reference`` each reference is judged
on its own and the best verdict counts (CAM's max over ODSum-Story's four summaries); otherwise
the references are joined into one prompt. The per-question verdict is the metric named by
``metric`` (``official_judge``, or ``acc_l`` for CAM); ``summary`` gives the accuracies as the
benchmark prints them (``print_qa_metrics.py``): per category, task-averaged (the mean of the
per-category accuracies), overall, and abstention accuracy apart (abstention items also count in
their category). An empty answer is wrong and not judged, as with the harness judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memharness.eval.judge import nuggets
from memharness.eval.judge.loop import answers_to_judge, ask
from memharness.eval.metrics import beam
from memharness.eval.record import scores
from memharness.eval.record.scores import put
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question
from omegaconf import DictConfig, OmegaConf

METRIC = "official_judge"  # the metric a protocol writes unless it names its own (``metric``)
VERDICTS = ("contains_yes", "exact_yes")
KIND = "official_judge"  # the Score kind of its verdicts


def settings(cfg: DictConfig) -> dict[str, Any] | None:
    """``judge.official`` as a plain dict, or None when the run's judge has no official protocol."""
    judge = cfg.get("judge")
    if not isinstance(judge, DictConfig) or judge.get("official") is None:
        return None
    return OmegaConf.to_container(judge.official, resolve=True)


def official_status(sample: Mapping[str, Any], proto: Mapping[str, Any]) -> str | None:
    """The official judge's status of a sample (None: not judged, failed earlier)."""
    return scores.status(sample, metric_name(proto))


def is_abstention(question_id: str, proto: Mapping[str, Any]) -> bool:
    mark = proto.get("abstention_id_contains")
    return bool(mark) and mark in question_id


def metric_name(proto: Mapping[str, Any]) -> str:
    """The metric the protocol's verdicts are written under."""
    return str(proto.get("metric") or METRIC)


def _category(question: Question, proto: Mapping[str, Any]) -> str:
    return (
        "default" if proto.get("category") is None else question.categories.get(proto["category"])
    )


def prompt_for(
    question: Question, prediction: str, proto: Mapping[str, Any], reference: str | None = None
) -> str:
    """The protocol's prompt for one answer (against ``reference``, else every reference joined);
    an unknown category is refused, naming it."""
    if is_abstention(question.id, proto) and proto.get("abstention_prompt"):
        template = proto["abstention_prompt"]
    else:
        key = _category(question, proto)
        if key not in proto["prompts"]:
            raise ValueError(
                f"judge.official ({proto['name']}): question {question.id} has "
                f"{proto['category']}={key!r}, which has no prompt (known: {sorted(proto['prompts'])})"
            )
        template = proto["prompts"][key]
    if reference is None:
        reference = " / ".join(question.answers)
    return template.format(question=question.text, reference=reference, prediction=prediction)


def requests_for(
    question: Question, prediction: str, proto: Mapping[str, Any]
) -> list[ChatRequest]:
    """One request, or one per reference with ``per_reference``."""
    choices = ("yes", "no") if proto.get("constrained") else None
    refs = list(question.answers) if proto.get("per_reference") and question.answers else [None]
    return [
        ChatRequest.user(
            prompt_for(question, prediction, proto, ref),
            max_tokens=int(proto["max_tokens"]),
            choices=choices,
        )
        for ref in refs
    ]


def request(question: Question, prediction: str, proto: Mapping[str, Any]) -> ChatRequest:
    return requests_for(question, prediction, {**proto, "per_reference": False})[0]


def verdict(reply: str, rule: str = "contains_yes") -> float:
    """``contains_yes`` (LongMemEval): correct when the reply contains 'yes', whatever else it
    says. ``exact_yes`` (CAM's ACC-L): correct only when the whole reply, stripped and lower-cased,
    is 'yes' ("Yes." is 0, as in CAM's code)."""
    if rule == "exact_yes":
        return float(reply.strip().lower() == "yes")
    if rule != "contains_yes":
        raise ValueError(f"judge.official.verdict must be one of {VERDICTS}, got {rule!r}")
    return float("yes" in reply.lower())


def unclear(reply: str) -> bool:
    """A reply that is neither a bare yes nor a bare no (scored 0 under ``exact_yes``, counted)."""
    return reply.strip().lower() not in ("yes", "no")


def judge_all(
    pending: Sequence[tuple[Question, Any, dict]], cfg: DictConfig, services: Any, judges: Any
) -> None:
    """Judge every scored generative answer with the official protocol (stage ``judge``)."""
    proto = settings(cfg)
    if proto is None:
        return

    def empty(record: dict) -> None:  # wrong, never judged
        put(record, metric_name(proto), 0.0, KIND, status="answer_empty")

    todo = answers_to_judge(pending, empty)
    if proto.get("per_nugget"):  # BEAM: one verdict per rubric item (eval/judge/nuggets.py)
        nuggets.judge_nuggets(todo, proto, services, judges)
        return
    per_question = [requests_for(q, r["prediction"], proto) for q, r in todo]
    flat = [req for reqs in per_question for req in reqs]
    completions = ask(judges.primary, flat, services, f"{proto['name']} judge")
    rule, metric, at = str(proto.get("verdict") or "contains_yes"), metric_name(proto), 0
    for (_, record), reqs in zip(todo, per_question, strict=True):
        comps, at = completions[at : at + len(reqs)], at + len(reqs)
        texts = [c.text for c in comps]
        reply = texts[0] if len(texts) == 1 else " | ".join(texts)
        if len(comps) < len(reqs) or not all(c.ok for c in comps):
            put(record, metric, None, KIND, reply=reply, status="judge_failed")
            continue
        status = "unclear" if rule == "exact_yes" and all(unclear(t) for t in texts) else "parsed"
        put(record, metric, max(verdict(t, rule) for t in texts), KIND, reply=reply, status=status)


class OfficialJudge:
    """The benchmark's own judge as a scorer (``official_judge`` or the protocol's ``metric``)."""

    name = KIND

    def score(self, pending: Sequence[tuple[Question, Any, dict]], ctx: Any) -> None:
        judge_all(pending, ctx.cfg, ctx.services, ctx.judges)


SCORER = OfficialJudge()


def accuracies(samples: Sequence[Mapping[str, Any]], proto: Mapping[str, Any]) -> dict[str, Any]:
    """Accuracies as the benchmark reports them, over the questions with a verdict. Task-averaged is
    the mean over the categories present (the official script, over all six types, gives NaN when a
    type is missing; ``categories_missing`` names them)."""
    by_type: dict[str, list[float]] = {str(k): [] for k in proto["prompts"]}
    abstention: list[float] = []
    metric, category = metric_name(proto), proto.get("category")
    for s in samples:
        value = scores.value(s, metric)
        if value is None:
            continue
        key = "default" if category is None else s["categories"].get(category)
        by_type.setdefault(str(key), []).append(value)
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
    statuses = [official_status(s, proto) for s in samples]
    rule = str(proto.get("verdict") or "contains_yes")
    return {
        "protocol": proto["name"],
        "metric": metric_name(proto),
        "model": judges.primary.model_id if judges is not None else None,
        "verdict": {
            "contains_yes": "'yes' in reply.lower()",
            "exact_yes": "reply.strip().lower() == 'yes'",
            "rubric_score": "the mean of the rubric items' JSON scores (1 / 0.5 / 0)",
        }[rule],
        "per_reference": bool(proto.get("per_reference")),
        "category": proto.get("category"),
        "questions": len(samples),
        "not_judged": sum(st is None for st in statuses),  # failed earlier (counted in counts)
        "judge_failed": statuses.count("judge_failed"),
        "unclear": statuses.count("unclear"),  # exact_yes: neither yes nor no (scored 0)
        "judge_unparsed": statuses.count("judge_unparsed"),  # rubric_score: a nugget unread
        **accuracies(samples, proto),
        **(
            {"beam": beam_aggregate(samples), "nugget_audit": nuggets.audit_summary(samples)}
            if proto.get("per_nugget")
            else {}
        ),
    }


def beam_aggregate(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """BEAM's official aggregate (report_results.py): per ability, event ordering by tau_norm."""
    rows = [
        {
            "ability": s["categories"].get("ability"),
            "nugget": scores.value(s, nuggets.NUGGET_METRIC),
            "tau_norm": scores.detail(s, nuggets.ORDER_METRIC, "tau_norm"),
        }
        for s in samples
    ]
    return beam.official_aggregate(rows)
