"""The answer pass over one episode's pending samples: each prediction recorded on its sample, then
scored by the answer's scorers (``eval/metrics/scorers.py``)."""

from __future__ import annotations

import logging
from typing import Any

from memharness.eval.metrics.scorers import ANSWER_SCORERS, ScoreContext
from memharness.eval.run import failures, timing
from memharness.eval.run.answer import (
    answer_request,
    final_answer,
    is_claim,
    is_multiple_choice,
)
from memharness.memsys.base import MemorySystem
from memharness.memsys.services.factory import Services
from memharness.memsys.services.meter import current_scope
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
    record["memory"]["answered_by"] = "memory"
    with meter.stage("answer"), timing.stage_time(current_scope(), "answer") as took:
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
    timing.keep(record, "answer", took)
    record_answer(question, record, comp.extra.get("prompt", ""), comp, cfg)
    # what the memory flags about this answer (e.g. partial, agent_steps)
    record["memory"].update(comp.extra.get("sample_fields", {}))


def answer_all(
    pending: list[tuple[Question, list[RetrievedItem], dict]], cfg: DictConfig, services: Services
) -> None:
    todo = [(q, items, r) for q, items, r in pending if r["status"] == "pending"]
    requests = [answer_request(q, items, cfg.eval.answer) for q, items, _ in todo]
    with services.meter.stage("answer"):
        completions = services.llm.complete(requests, desc="answer")
    for (q, _, record), req, comp in zip(todo, requests, completions, strict=False):
        if comp.ok:
            timing.keep_answer_call(record, comp.latency_s)
        record_answer(q, record, req.messages[-1][1], comp, cfg)


def record_answer(q: Question, record: dict, prompt: str, comp: Any, cfg: DictConfig) -> None:
    """Record a prediction (``comp``, a Completion) and its answer mode on its sample; the
    scorers (``score_answers``) score it."""
    record["prompt"] = prompt
    record["prediction"] = comp.text.strip()
    record["answer_cached"] = comp.cached
    if comp.extra.get("prompt_tokens_cut"):  # the backend had to cut the prompt to fit its context
        record["prompt_tokens_cut"] = comp.extra["prompt_tokens_cut"]
    if not comp.ok:
        record.update(status="answer_failed", error=comp.error)
        return
    mode = (
        "claim_verification"
        if is_claim(q, cfg.eval.answer.mode)
        else "multiple_choice"
        if is_multiple_choice(q, cfg.eval.answer.mode)
        else "generative"
    )
    if mode == "generative":  # eval.answer.prompt's reply (a chain-of-thought one ends in a marker)
        final = final_answer(comp.text, cfg.eval.answer)
        if final is None:
            marker = cfg.eval.answer.final_marker
            record.update(
                status="answer_failed", error=f"AnswerUnparsed: no line starts with {marker!r}"
            )
            return
        record["prediction"] = final
    record["status"] = "scored"
    record["mode"] = mode
    failures.flag_empty_answer(record)


def score_answers(
    pending: list[tuple[Question, list[RetrievedItem], dict]], cfg: DictConfig
) -> None:
    """The answer's scorers (choice, claim, lexical, latency) over the episode's scored answers."""
    ctx = ScoreContext(cfg)
    for scorer in ANSWER_SCORERS:
        scorer.score(pending, ctx)
