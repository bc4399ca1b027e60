"""Memory-attributable accuracy: what the model gets right only because of the memory.

With ``eval.closed_book.enabled``, every scored question is also answered with no memory in the
prompt (``eval.closed_book.prompt`` / ``mc_prompt``; claims: ``eval.answer.claim_prompt`` with no
passages) and scored: multiple-choice questions by the chosen option, claims (FABLES) by the
verdict, generative ones by the primary judge with the strict prompt (by exact match when the judge
is off). A question the model answers correctly closed-book does not test the memory; the tables
then report every metric also on the others (``<metric>:needs_memory``) and the share
answered closed-book (``closed_book_accuracy``). Calls go to the ``closed_book`` stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.judge.judges import Judges
from memharness.eval.judge.loop import verdicts
from memharness.eval.judge.prompt import reference_text
from memharness.eval.metrics.aggregate import summarize_all
from memharness.eval.metrics.claims import parse_verdict
from memharness.eval.metrics.lexical import exact_match
from memharness.eval.metrics.scorers import mc_correct
from memharness.eval.record import scores
from memharness.eval.record.scores import put
from memharness.eval.run.answer import (
    answer_request,
    is_claim,
    is_multiple_choice,
)
from omegaconf import DictConfig, OmegaConf

SUFFIX = ":needs_memory"
METRIC, KIND = "closed_book_accuracy", "closed_book"  # its score: value 0/1, details the answer


def _answer_cfg(cfg: DictConfig) -> DictConfig:
    """The answer settings with the closed-book prompts (no {context} in them)."""
    cb = cfg.eval.closed_book
    return OmegaConf.create(
        {
            **OmegaConf.to_container(cfg.eval.answer, resolve=True),
            "prompt": cb.prompt,
            "mc_prompt": cb.mc_prompt,
            "max_tokens": int(cb.max_tokens),
        }
    )


def closed_book_pass(
    pending: Sequence[tuple[Any, Any, dict]], cfg: DictConfig, services: Any, judges: Judges
) -> int:
    """Answer and score the scored questions without memory: score ``closed_book_accuracy`` (its
    details: the closed-book prediction, status, criterion, judge_status, error).

    Returns the number of questions answered closed-book."""
    todo = [(q, r) for q, _, r in pending if r["status"] == "scored"]
    if not todo:
        return 0
    answer_cfg = _answer_cfg(cfg)
    requests = [answer_request(q, [], answer_cfg) for q, _ in todo]
    use_judge = bool(cfg.eval.judge.enabled)
    with services.meter.stage("closed_book"):
        completions = services.llm.complete(requests, desc="closed book")
        to_judge, entries = [], []
        for (q, record), comp in zip(todo, completions, strict=False):
            entry: dict[str, Any] = {"prediction": comp.text.strip(), "correct": None}
            if not comp.ok:
                entry.update(status="answer_failed", error=comp.error)
            elif not entry["prediction"]:  # an empty answer is wrong; it is never judged
                entry.update(status="answer_empty", correct=0.0)
            elif is_claim(q, cfg.eval.answer.mode):  # the claim prompt with no passages
                verdict = parse_verdict(comp.text)
                entry.update(
                    status="scored", criterion="claim_accuracy", correct=float(verdict in q.answers)
                )
            elif is_multiple_choice(q, cfg.eval.answer.mode):
                entry.update(
                    status="scored", criterion="mc_accuracy", correct=mc_correct(q, comp.text)[1]
                )
            elif use_judge:
                entry.update(status="scored", criterion="judge")
                to_judge.append((q, entry))
            else:
                entry.update(
                    status="scored",
                    criterion="exact_match",
                    correct=max(
                        exact_match(entry["prediction"], ref)
                        for ref in (q.answers or [reference_text(q)])
                    ),
                )
            entries.append((record, entry))
        cases = [(q, reference_text(q), e["prediction"]) for q, e in to_judge]
        judged = verdicts(judges.primary, cfg.eval.judge, cases, "closed-book judge")
        for (_, entry), v in zip(to_judge, judged, strict=False):
            entry["judge_status"] = v["status"]
            entry["correct"] = None if v["verdict"] is None else float(v["verdict"])
    for record, entry in entries:
        correct = entry.pop("correct")
        put(record, METRIC, correct, KIND, **entry)
    return len(todo)


class ClosedBook:
    """The closed-book pass as a scorer (``closed_book_accuracy``), run over the whole run."""

    name = KIND

    def score(self, pending: Sequence[tuple[Any, Any, dict]], ctx: Any) -> None:
        closed_book_pass(pending, ctx.cfg, ctx.services, ctx.judges)


SCORER = ClosedBook()


def needs_memory(samples: Sequence[dict]) -> list[dict]:
    """Samples the model could not answer closed-book (a closed-book verdict of 0)."""
    return [s for s in samples if scores.value(s, METRIC) == 0]


def summarize(
    samples: Sequence[dict], metrics: Sequence[str], resamples: int, confidence: float, seed: int
) -> dict[str, dict[str, float]]:
    """``<metric>:needs_memory`` summaries and ``closed_book_accuracy``; empty without a closed-book pass."""
    if not any(scores.value(s, METRIC) is not None for s in samples):
        return {}
    out = summarize_all(samples, [METRIC], resamples, confidence, seed)
    for metric, summary in summarize_all(
        needs_memory(samples), metrics, resamples, confidence, seed
    ).items():
        out[metric + SUFFIX] = summary
    return out
