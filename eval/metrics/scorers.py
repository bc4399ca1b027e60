"""Scorers: each fills its metrics into the samples' ``scores`` (run format 3), one per concern.

Every scorer implements one protocol, ``score(pending, ctx)``: ``pending`` is the episode's
(question, retrieved items, sample record) triples, ``ctx`` what a scorer may need beyond them
(the config, the services, the judges, the episode's units; a run-level scorer such as the judge
audit leaves its metrics.json section in ``ctx.sections``). A scorer writes one ``Score`` per
metric it fills (``eval/record/scores.py put``) and never touches another scorer's. The registry
(``registry.py``) names the scorer of every metric, so adding a metric is one registry entry and
one scorer (or one function of an existing scorer), never a schema change.

The scorers of the answer live here (choice, claim, lexical, latency); the judge's are in
``eval/judge/`` (judge, official judge, judge audit), evidence recall and closed book in
``eval/run/``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memharness.eval.metrics import registry
from memharness.eval.metrics.claims import counted_label, parse_verdict
from memharness.eval.metrics.forgetting import Forgetting
from memharness.eval.metrics.lexical import parse_choice
from memharness.eval.record.scores import detail, put
from memharness.memsys.types import Question
from omegaconf import OmegaConf

Pending = Sequence[tuple[Question, Sequence[Any], dict[str, Any]]]


@dataclass
class ScoreContext:
    """What a scorer may read besides the samples: the run's config and, when it calls a model or
    reads the episode, the services, the judges and the episode's units by id."""

    cfg: Any
    services: Any = None
    judges: Any = None
    units: Mapping[str, Any] | None = None
    sections: dict[str, Any] = field(default_factory=dict)  # run-level results for metrics.json


class Scorer(Protocol):
    """One concern's scores: ``name`` is the ``kind`` of every ``Score`` it writes."""

    name: str

    def score(self, pending: Pending, ctx: ScoreContext) -> None: ...


def references(question: Question) -> list[str]:
    """The references an answer is scored against: the gold answers, or the gold option's text."""
    if question.answers:
        return list(question.answers)
    if question.options and question.gold_option is not None:
        return [question.options[question.gold_option]]
    raise ValueError(f"question {question.id} has neither answers nor a gold option")


def _scored(pending: Pending, mode: str | None = None) -> list[tuple[Question, dict[str, Any]]]:
    return [
        (q, r)
        for q, _, r in pending
        if r["status"] == "scored" and (mode is None or r.get("mode") == mode)
    ]


def mc_correct(question: Question, reply: str) -> tuple[int | None, float | None]:
    """Parsed option index and 0/1 correctness. A reply naming no single option is wrong (0), as
    in multiple-choice convention, and counted as ``mc_unparsed``."""
    choice = parse_choice(reply, len(question.options or ()))
    if question.gold_option is None:
        return choice, None
    return choice, float(choice is not None and choice == question.gold_option)


class Choice:
    """Multiple choice: the option letter read from the answer (``mc_accuracy``); a reply naming no
    single option is wrong (0) and counted as ``mc_unparsed``."""

    name = "choice"

    def score(self, pending: Pending, ctx: ScoreContext) -> None:
        for q, r in _scored(pending, "multiple_choice"):
            choice, correct = mc_correct(q, r["prediction"])
            status = "mc_unparsed" if choice is None else "parsed"
            put(r, "mc_accuracy", correct, self.name, predicted_option=choice, status=status)


class Claim:
    """Claim verification (FABLES): the faithful / unfaithful verdict read from the answer
    (``claim_accuracy``; F1_P / F1_N are computed over the run's claims from its details)."""

    name = "claim"

    def score(self, pending: Pending, ctx: ScoreContext) -> None:
        rule = OmegaConf.select(ctx.cfg, "eval.answer.claim_unparsed", default="other_label")
        for q, r in _scored(pending, "claim_verification"):
            verdict = parse_verdict(r["prediction"])
            status = "claim_unparsed" if verdict is None else "parsed"
            put(
                r,
                "claim_accuracy",
                float(verdict in q.answers),
                self.name,
                predicted_label=verdict,
                counted_label=counted_label(q.answers[0], verdict, rule),
                status=status,
            )


def answer_text(question: Question, record: Mapping[str, Any]) -> str:
    """What the lexical metrics compare: a claim's verdict, a chosen option's text, or the answer."""
    if record.get("mode") == "claim_verification":
        return detail(record, "claim_accuracy", "predicted_label") or ""
    if record.get("mode") == "multiple_choice":
        choice = detail(record, "mc_accuracy", "predicted_option")
        return question.options[choice] if choice is not None else ""
    return record["prediction"]


class Lexical:
    """Every registry metric scored from the answer text and the references (ROUGE, EM, F1, LoCoMo's
    own scores): run after ``Choice`` and ``Claim``, whose details give the answer text."""

    name = "lexical"

    def score(self, pending: Pending, ctx: ScoreContext) -> None:
        for q, r in _scored(pending):
            scores = registry.answer_scores(answer_text(q, r), references(q), q, r["prediction"])
            for metric, value in scores.items():
                put(r, metric, value, self.name)


TIMING_KEY = "_timing"  # transient sample key the runner fills (eval/run/timing.py); popped here


class Latency:
    """What the run measured per question of its cost: the retrieved context's tokens and the time
    of its retrieval and answer (each the backend calls' latency when made plus the system's own
    compute, so a warm rerun shows the cold run's backend latencies; eval/run/timing.py)."""

    name = "latency"

    def score(self, pending: Pending, ctx: ScoreContext) -> None:
        for _, _, r in pending:
            took = r.pop(TIMING_KEY, None) or {}
            if r["status"] != "scored":
                continue
            put(r, "context_tokens", r["context_tokens"], self.name)
            search, answer = took.get("retrieve"), took.get("answer")
            if search is not None:
                put(r, "search_latency_s", sum(search.values()), self.name, **search)
                put(r, "search_backend_s", search["backend_s"], self.name)
                put(r, "search_compute_s", search["compute_s"], self.name)
            if answer is not None:
                put(r, "answer_latency_s", sum(answer.values()), self.name, **answer)
            if search is not None and answer is not None:
                total = sum(search.values()) + sum(answer.values())
                put(r, "total_latency_s", total, self.name)


ANSWER_SCORERS: tuple[Scorer, ...] = (Choice(), Claim(), Lexical(), Latency(), Forgetting())
