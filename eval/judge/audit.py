"""How far the judge can be trusted, measured inside every run (metrics.json ``judge_reliability``).

- **strict vs lenient**: every scored generative answer is judged again with a generous prompt
  (``eval.judge_audit.lenient_prompt``, the MemGPT / LoCoMo grading style); the accuracy each prompt
  gives and Cohen's κ between the two verdicts show how much the numbers depend on the prompt.
- **second judge** (``judge@judge2=<name>``): the same answers judged by another model with the
  strict prompt; κ between the judges.
- **canaries**: for a seeded sample of questions, answers whose verdict is known: the reference
  itself (should be 1), another question's reference (should be 0) and a plausible wrong answer
  written by the judge LLM itself (should be 0). The false-accept rate of the last two is how
  often the judge would score a wrong answer as right.

Calls go to the ``audit`` stage, so they never count as the method's or the judge's own cost.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from memharness.eval.judge.judges import Judges
from memharness.eval.judge.loop import verdicts
from memharness.eval.judge.prompt import reference_text
from memharness.eval.metrics.lexical import normalize_answer, token_f1
from memharness.eval.metrics.stats import cohen_kappa
from memharness.eval.record import scores
from memharness.eval.record.scores import put
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question
from omegaconf import DictConfig

KIND = "judge_audit"  # the Score kind of the lenient and second judges
CASE_KEYS = ("verdict", "reply", "status")  # of a canary verdict, as metrics.json records it


def agreement(a: Sequence[float | None], b: Sequence[dict]) -> dict[str, Any] | None:
    """κ, agreement and both accuracies over the items both verdicts parsed, plus the second
    verdicts' failures (``b``: results of ``verdicts``), which are counted, never dropped."""
    pairs = [
        (x, y["verdict"])
        for x, y in zip(a, b, strict=False)
        if x is not None and y["verdict"] is not None
    ]
    failures = {
        "unparsed": sum(r["status"] == "judge_unparsed" for r in b),
        "failed": sum(r["status"] == "judge_failed" for r in b),
    }
    if not pairs:
        return {"kappa": None, "agreement": None, "n": 0, **failures}
    xs, ys = [int(x) for x, _ in pairs], [int(y) for _, y in pairs]
    return {
        **cohen_kappa(xs, ys),
        "accuracy_a": sum(xs) / len(xs),
        "accuracy_b": sum(ys) / len(ys),
        **failures,
    }


def _rate(results: Sequence[dict], accept: bool) -> dict[str, Any]:
    parsed = [r["verdict"] for r in results if r["verdict"] is not None]
    hits = sum(v == int(accept) for v in parsed)
    return {
        "rate": hits / len(parsed) if parsed else None,
        "n": len(parsed),
        "unparsed": sum(r["status"] == "judge_unparsed" for r in results),
        "failed": sum(r["status"] == "judge_failed" for r in results),
    }


def canary_cases(
    questions: Sequence[Question], k: int, seed: int
) -> tuple[list[Question], list[tuple]]:
    """A seeded sample of ``k`` questions and, for each, another sampled question's reference
    (the next one whose normalised reference differs; none when all are alike)."""
    rng = random.Random(seed)
    picked = [
        questions[i] for i in sorted(rng.sample(range(len(questions)), min(k, len(questions))))
    ]
    refs = [reference_text(q) for q in picked]
    others = []
    for i, (q, ref) in enumerate(zip(picked, refs, strict=False)):
        for j in range(1, len(picked)):
            other = refs[(i + j) % len(picked)]
            if normalize_answer(other) != normalize_answer(ref):
                others.append((q, ref, other))
                break
    return picked, others


def wrong_answers(
    llm: LLM, questions: Sequence[Question], audit_cfg: Any
) -> tuple[list[tuple], int]:
    """Plausible wrong answers written by the judge LLM; too-close or empty ones are discarded (counted)."""
    requests = [
        ChatRequest.user(
            audit_cfg.wrong_prompt.format(question=q.text, reference=reference_text(q)),
            max_tokens=int(audit_cfg.get("wrong_max_tokens", 32)),
        )
        for q in questions
    ]
    cases, discarded = [], 0
    for q, comp in zip(questions, llm.complete(requests, desc="wrong answers"), strict=False):
        text = comp.text.strip().splitlines()[0].strip() if comp.ok and comp.text.strip() else ""
        ref = reference_text(q)
        if (
            not text
            or normalize_answer(text) == normalize_answer(ref)
            or token_f1(text, ref) >= float(audit_cfg.get("wrong_max_f1", 0.6))
        ):
            discarded += 1
            continue
        cases.append((q, ref, text))
    return cases, discarded


def canary_set(author: LLM, questions: Sequence[Question], cfg: DictConfig) -> dict[str, Any]:
    """The canary answers, written once: the reference, another question's, a plausible wrong one."""
    audit_cfg = cfg.eval.judge_audit
    picked, others = canary_cases(questions, int(audit_cfg.get("canaries", 8)), int(cfg.seed))
    own = [(q, reference_text(q), reference_text(q)) for q in picked]
    wrong, discarded = (
        wrong_answers(author, picked, audit_cfg)
        if audit_cfg.get("wrong_answers", True)
        else ([], 0)
    )
    return {
        "questions": len(picked),
        "discarded": discarded,
        "groups": (("reference", own), ("other_answer", others), ("wrong_answer", wrong)),
    }


def judge_canaries(judge: LLM, canary: dict[str, Any], cfg: DictConfig) -> dict[str, Any]:
    """One judge's verdicts on the canaries: its true-accept and false-accept rates, and every case."""
    results = {
        kind: verdicts(judge, cfg.eval.judge, cases, f"canary {kind}")
        for kind, cases in canary["groups"]
    }
    cases = [
        {"kind": kind, "question_id": q.id, "answer": ans, **{k: r[k] for k in CASE_KEYS}}
        for kind, group in canary["groups"]
        for (q, _, ans), r in zip(group, results[kind], strict=False)
    ]
    return {
        "questions": canary["questions"],
        "accepts_reference": _rate(results["reference"], True),
        "false_accept_other": _rate(results["other_answer"], True),
        "false_accept_wrong": {
            **_rate(results["wrong_answer"], True),
            "discarded": canary["discarded"],
        },
        "cases": cases,
    }


def audit(
    pending: Sequence[tuple[Question, Any, dict]], cfg: DictConfig, services: Any, judges: Judges
) -> dict[str, Any] | None:
    """Run the audit over the judged samples; scores ``judge_lenient`` / ``judge2`` on them (kind
    ``judge_audit``) and returns metrics.json's ``judge_reliability``."""
    audit_cfg = cfg.eval.get("judge_audit")
    todo = [
        (q, r) for q, _, r in pending if r["status"] == "scored" and r.get("mode") == "generative"
    ]
    if audit_cfg is None or not todo:
        return None
    for _, r in todo:  # an empty answer is wrong under every judge and is never sent to one
        if r.get("answer_empty"):
            for k in ("judge_lenient", "judge2"):
                if _enabled(k, audit_cfg, judges):
                    put(r, k, 0.0, KIND, status="answer_empty")
    todo = [(q, r) for q, r in todo if not r.get("answer_empty")]
    section: dict[str, Any] = {**judges.describe(), "n": len(todo)}
    strict = [scores.value(r, "judge") for _, r in todo]
    cases = [(q, reference_text(q), r["prediction"]) for q, r in todo]
    with services.meter.stage("audit"):
        if audit_cfg.get("lenient", True):
            lenient_cfg = {
                "prompt": audit_cfg.lenient_prompt,
                "max_tokens": cfg.eval.judge.max_tokens,
            }
            lenient = verdicts(judges.primary, _Obj(lenient_cfg), cases, "lenient judge")
            for (_, r), v in zip(todo, lenient, strict=False):
                value = None if v["verdict"] is None else float(v["verdict"])
                put(r, "judge_lenient", value, KIND, status=v["status"])
            section["strict_vs_lenient"] = agreement(strict, lenient)
        if judges.second is not None:
            second = verdicts(judges.second, cfg.eval.judge, cases, "second judge")
            for (_, r), v in zip(todo, second, strict=False):
                value = None if v["verdict"] is None else float(v["verdict"])
                put(r, "judge2", value, KIND, status=v["status"])
            section["judge_vs_judge2"] = agreement(strict, second)
        # Canaries are drawn from the whole question set, never from this row's answers, so every
        # memory system of a sweep asks the same canary calls and the call cache answers all but the
        # first row's (still reported in every row).
        questions = [q for q, _, _ in pending]
        if int(audit_cfg.get("canaries", 0)) >= 2 and len(questions) >= 2:
            canary = canary_set(
                judges.primary, questions, cfg
            )  # the judge LLM writes the wrong answers
            section["canaries"] = judge_canaries(judges.primary, canary, cfg)
            if judges.second is not None:
                section["canaries_judge2"] = judge_canaries(judges.second, canary, cfg)
    return section


class JudgeAudit:
    """The audit as a scorer (``judge_lenient``, ``judge2``); its metrics.json section goes to
    ``ctx.sections["judge_reliability"]``."""

    name = KIND

    def score(self, pending: Sequence[tuple[Question, Any, dict]], ctx: Any) -> None:
        ctx.sections["judge_reliability"] = audit(pending, ctx.cfg, ctx.services, ctx.judges)


SCORER = JudgeAudit()


def _enabled(metric: str, audit_cfg: Any, judges: Judges) -> bool:
    return (
        bool(audit_cfg.get("lenient", True))
        if metric == "judge_lenient"
        else judges.second is not None
    )


class _Obj(dict):
    """A dict read like a config node (``judge_request`` reads ``cfg.prompt`` / ``cfg.max_tokens``)."""

    __getattr__ = dict.__getitem__
