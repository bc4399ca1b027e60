"""The answer and judge passes over one episode's pending samples: each prediction recorded on its
sample and scored (lexical metrics, multiple-choice letter, the judge's verdict)."""

from __future__ import annotations

import logging
from typing import Any

from memharness.eval.judge.prompt import reference_text
from memharness.eval.metrics.claims import parse_verdict
from memharness.eval.metrics.registry import answer_scores
from memharness.eval.run import failures
from memharness.eval.run.answer import (
    answer_request,
    is_claim,
    is_multiple_choice,
    mc_correct,
)
from memharness.memsys.base import MemorySystem
from memharness.memsys.services.factory import Services
from memharness.memsys.types import Question, RetrievedItem
from omegaconf import DictConfig

log = logging.getLogger("memharness")


def answer_by_memory(
    memory: MemorySystem,
    question: Question,
    items: list[RetrievedItem],
    record: dict,
    cfg: DictConfig,
    meter: Any,
) -> None:
    """A memory that answers itself does so while it exists (the runner discards it after the
    episode), under the "answer" stage; the prediction is scored like every other answer."""
    record["answered_by"] = "memory"
    with meter.stage("answer"):
        try:
            comp = memory.answer(
                question, items, is_multiple_choice(question, cfg.eval.answer.mode)
            )
        except Exception as err:  # recorded and counted as answer_failed, never dropped
            failures.log_step_failure(log, f"the memory failed to answer {question.id}", err)
            record.update(
                prompt="",
                prediction="",
                status="answer_failed",
                error=f"{type(err).__name__}: {err}",
            )
            return
    record_answer(question, record, comp.extra.get("prompt", ""), comp, cfg)
    record.update(
        comp.extra.get("sample_fields", {})
    )  # what the memory flags about this answer (e.g. partial)


def answer_all(
    pending: list[tuple[Question, list[RetrievedItem], dict]], cfg: DictConfig, services: Services
) -> None:
    todo = [(q, items, r) for q, items, r in pending if r["status"] == "pending"]
    requests = [answer_request(q, items, cfg.eval.answer) for q, items, _ in todo]
    with services.meter.stage("answer"):
        completions = services.llm.complete(requests, desc="answer")
    for (q, _, record), req, comp in zip(todo, requests, completions, strict=False):
        record_answer(q, record, req.messages[-1][1], comp, cfg)


def record_answer(q: Question, record: dict, prompt: str, comp: Any, cfg: DictConfig) -> None:
    """Record a prediction (``comp``, a Completion) on its sample and score it (lexical metrics,
    multiple-choice letter)."""
    record["prompt"] = prompt
    record["prediction"] = comp.text.strip()
    record["answer_cached"] = comp.cached
    if comp.extra.get("prompt_tokens_cut"):  # the backend had to cut the prompt to fit its context
        record["prompt_tokens_cut"] = comp.extra["prompt_tokens_cut"]
    if not comp.ok:
        record.update(status="answer_failed", error=comp.error)
        return
    record["status"] = "scored"
    record["mode"] = (
        "claim_verification"
        if is_claim(q, cfg.eval.answer.mode)
        else "multiple_choice"
        if is_multiple_choice(q, cfg.eval.answer.mode)
        else "generative"
    )
    if record["mode"] == "claim_verification":  # F1_P / F1_N are computed over the run's claims
        verdict = parse_verdict(comp.text)
        record["predicted_label"] = verdict
        record["claim_status"] = "claim_unparsed" if verdict is None else "parsed"
        record["metrics"]["claim_accuracy"] = float(verdict in q.answers)
        prediction_text = verdict or ""
    elif record["mode"] == "multiple_choice":
        choice, correct = mc_correct(q, comp.text)
        record["predicted_option"] = choice
        record["mc_status"] = "mc_unparsed" if choice is None else "parsed"
        record["metrics"]["mc_accuracy"] = correct
        prediction_text = q.options[choice] if choice is not None else ""
    else:
        prediction_text = record["prediction"]
    failures.flag_empty_answer(record)
    record["metrics"].update(
        answer_scores(prediction_text, list(q.answers) or [reference_text(q)], q)
    )
    record["metrics"]["context_tokens"] = record["context_tokens"]
