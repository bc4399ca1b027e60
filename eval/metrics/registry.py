"""Every metric a run may report, declared once.

Each entry says which way is better, what kind of number it is, how it aggregates, which report
section shows it and, for a metric scored from an answer and its references, how to score it.
The runner, ``metrics.json`` validation, every table, the paired tests, the plots and the
browser read this table; adding a metric is one entry here naming its scorer (and, when it is
scored from the answer, its ``score`` function, which the lexical scorer applies), never a change
of the run record's schema. The entries of benchmarks' own metrics and of the forgetting protocol
are in ``benchmark_metrics.py``, those read from the clock and the ledger in ``measured_metrics.py``;
this module lists them all in one ``METRICS`` (the type: ``metric.py``).
"""

from __future__ import annotations

from typing import Any

from memharness.eval.metrics import claims, lexical, locomo
from memharness.eval.metrics.benchmark_metrics import FORGETTING, MAB_BEAM, MEMBENCH
from memharness.eval.metrics.measured_metrics import MEASURED
from memharness.eval.metrics.metric import Kind, Metric, Section
from memharness.memsys.types import Question

__all__ = ["Kind", "Metric", "Section"]

METRICS: tuple[Metric, ...] = (
    Metric(
        "judge",
        True,
        "accuracy",
        "scores",
        "LLM judge: 1 if the answer means the reference",
        selectable=True,
        headline=True,
        scorer="judge",
    ),
    Metric(
        "mc_accuracy",
        True,
        "accuracy",
        "scores",
        "multiple choice: the gold option chosen",
        headline=True,
        scorer="choice",
    ),
    Metric(
        "rouge_l_recall",
        True,
        "overlap",
        "scores",
        "ROUGE-L recall against the reference",
        score=lambda p, r: lexical.rouge(p, r)["rouge_l_recall"],
        selectable=True,
        headline=True,
    ),
    Metric(
        "rouge_1_f",
        True,
        "overlap",
        "scores",
        "ROUGE-1 F1",
        score=lambda p, r: lexical.rouge(p, r)["rouge_1_f"],
        selectable=True,
    ),
    Metric(
        "rouge_l_f",
        True,
        "overlap",
        "scores",
        "ROUGE-L F1",
        score=lambda p, r: lexical.rouge(p, r)["rouge_l_f"],
        selectable=True,
    ),
    Metric(
        "exact_match",
        True,
        "overlap",
        "scores",
        "normalised exact match (SQuAD)",
        score=lexical.exact_match,
        selectable=True,
    ),
    Metric(
        "f1",
        True,
        "overlap",
        "scores",
        "token F1 (SQuAD normalisation)",
        score=lexical.token_f1,
        selectable=True,
        headline=True,
    ),
    Metric(
        "locomo_f1",
        True,
        "overlap",
        "scores",
        "LoCoMo's official F1 (Porter-stemmed tokens; category 1 split on commas), categories 1-4",
        score_question=locomo.locomo_f1,
        selectable=True,
    ),
    Metric(
        "locomo_adversarial",
        True,
        "accuracy",
        "scores",
        "LoCoMo's official category-5 rule: the answer says 'not mentioned' / 'no information available'",
        score_question=locomo.locomo_adversarial,
        selectable=True,
    ),
    *MAB_BEAM,
    *MEMBENCH,
    Metric(
        "claim_accuracy",
        True,
        "accuracy",
        "scores",
        "claim verification: the faithful / unfaithful verdict matches the gold label",
        scorer="claim",
    ),
    Metric(
        "f1_p",
        True,
        "accuracy",
        "scores",
        "claim verification F1 of the positive label (faithful) over all claims (FABLES F1_P)",
        aggregate="label_f1",
        label=claims.FAITHFUL,
        selectable=True,
        scorer="claim",
    ),
    Metric(
        "f1_n",
        True,
        "accuracy",
        "scores",
        "claim verification F1 of the negative label (unfaithful) over all claims (FABLES F1_N)",
        aggregate="label_f1",
        label=claims.UNFAITHFUL,
        selectable=True,
        scorer="claim",
    ),
    Metric(
        "closed_book_accuracy",
        True,
        "accuracy",
        "memory",
        "share answered correctly with no memory in the prompt",
        scorer="closed_book",
    ),
    Metric(
        "evidence_recall_at_",
        True,
        "retrieval",
        "retrieval",
        "share of the gold evidence under the top k items' provenance",
        prefix=True,
        scorer="evidence",
    ),
    Metric(
        "evidence_recall",
        True,
        "retrieval",
        "retrieval",
        "share of the gold evidence under every retrieved item",
        headline=True,
        scorer="evidence",
    ),
    Metric(
        "source_recall_all_at_",
        True,
        "retrieval",
        "retrieval",
        "1 if every gold source document (session, article) is among the top k retrieved sources "
        "(LongMemEval's recall_all@k: relevant sessions are answer sessions with a user turn marked "
        "has_answer; questions with none get no value, as the official averages leave them out)",
        prefix=True,
        scorer="evidence",
    ),
    Metric(
        "source_ndcg_any_at_",
        True,
        "retrieval",
        "retrieval",
        "nDCG of the top k retrieved source documents, binary relevance (LongMemEval's ndcg_any@k, "
        "over the same relevant sessions)",
        prefix=True,
        scorer="evidence",
    ),
    Metric(
        "evidence_units",
        None,
        "retrieval",
        "retrieval",
        "source units the retrieved items cover",
        scorer="evidence",
    ),
    Metric(
        "context_tokens",
        False,
        "cost",
        "retrieval",
        "tokens of the retrieved context",
        scorer="latency",
    ),
    Metric(
        "judge_lenient",
        True,
        "accuracy",
        "judging",
        "the judge with the lenient prompt",
        scorer="judge_audit",
    ),
    Metric("judge2", True, "accuracy", "judging", "a second judge model", scorer="judge_audit"),
    Metric(
        "official_judge",
        True,
        "accuracy",
        "scores",
        "the benchmark's own judge prompts and verdict rule (dataset=longmemeval)",
        scorer="official_judge",
    ),
    Metric(
        "acc_l",
        True,
        "accuracy",
        "scores",
        "CAM's ACC-L: the judge says the answer agrees with a reference summary (yes / no, the best "
        "over the references; conf/judge/official/cam_acc_l.yaml, dataset=qmsum | odsum_*)",
        scorer="official_judge",
    ),
)
METRICS += FORGETTING + MEASURED
_BY_NAME = {m.name: m for m in METRICS if not m.prefix}
_PREFIXES = [m for m in METRICS if m.prefix]
NEEDS_MEMORY = ":needs_memory"  # suffix: the metric on the questions closed-book got wrong
_LEXICAL = [m for m in METRICS if m.scorer == "lexical"]  # scored from the answer itself


SCORERS = (
    "lexical",
    "choice",
    "claim",
    "latency",
    "ingestion",  # per episode, from memory_stats.json (eval/metrics/ingestion.py): no Score
    "evidence",
    "judge",
    "official_judge",
    "judge_audit",
    "closed_book",
    "forgetting",
    "forget_judge",
)  # the kinds of Score (eval/metrics/scorers.py, eval/judge/, eval/run/)


def lookup(name: str) -> Metric | None:
    """The entry of a metric key as runs write it (``f1``, ``evidence_recall_at_3``,
    ``judge:needs_memory``); None for a key no entry declares."""
    base = name.split(":")[0]
    if base in _BY_NAME:
        return _BY_NAME[base]
    return next((m for m in _PREFIXES if base.startswith(m.name)), None)


def untimed(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (metric key -> anything) without the metrics read from the clock (``timed``):
    what two runs of one config must agree on."""
    return {k: v for k, v in values.items() if not getattr(lookup(k), "timed", False)}


def direction(name: str) -> bool | None:
    """True if higher is better, False if lower is, None if not ranked (or not declared)."""
    entry = lookup(name)
    return entry.higher_is_better if entry else None


def names(
    section: Section | None = None, headline: bool | None = None, selectable: bool | None = None
) -> tuple[str, ...]:
    """Declared (non-prefix) metric names in declaration order, filtered."""
    return tuple(
        m.name
        for m in METRICS
        if not m.prefix
        and (section is None or m.section == section)
        and (headline is None or m.headline == headline)
        and (selectable is None or m.selectable == selectable)
    )


def in_section(name: str, section: Section) -> bool:
    entry = lookup(name)
    if name.endswith(NEEDS_MEMORY):
        return section == "memory"
    return entry is not None and entry.section == section


def answer_scores(
    prediction: str,
    references: list[str],
    question: Question | None = None,
    reply: str | None = None,
) -> dict[str, float]:
    """Every metric with a ``score`` function, each the max over the references; with ``question``,
    also every ``score_question`` metric that applies to it, given the raw ``reply`` when there is
    one (a benchmark's rule reads the reply as its code does, not the option text it chose)."""
    if not references:
        raise lexical.MetricError("a sample has no reference answer")
    out = {
        m.name: max(m.score(prediction, ref) for ref in references)
        for m in _LEXICAL
        if m.score is not None
    }
    for m in _LEXICAL:
        said = prediction if reply is None else reply
        value = m.score_question(said, question) if m.score_question and question else None
        if value is not None:
            out[m.name] = value
    return out
