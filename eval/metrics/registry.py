"""Every metric a run may report, declared once.

Each entry says which way is better, what kind of number it is, how it aggregates, which report
section shows it and, for a metric scored from an answer and its references, how to score it.
The runner, ``metrics.json`` validation, every table, the paired tests, the plots and the
browser read this table; adding a metric is one entry here naming its scorer (and, when it is
scored from the answer, its ``score`` function, which the lexical scorer applies), never a change
of the run record's schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from memharness.eval.metrics import claims, lexical, locomo, mab
from memharness.memsys.types import Question

Kind = Literal["accuracy", "overlap", "retrieval", "cost", "latency"]
Section = Literal["scores", "memory", "retrieval", "judging", "latency", "ingestion"]


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` (a prefix when ``prefix``), its direction and where it shows."""

    name: str
    higher_is_better: bool | None  # None: reported, never ranked
    kind: Kind
    section: Section  # the report table that shows it
    doc: str
    # mean: bootstrap mean and CI over the questions that have it; label_f1: F1 of ``label`` over
    # the run's claim-verification answers (eval/metrics/claims.py), bootstrapped over the claims;
    # percentiles: the mean and CI plus p50 and p95 over the questions; episode: one value per
    # episode (memory_stats.json), mean and CI over the episodes (eval/metrics/ingestion.py)
    aggregate: Literal["mean", "label_f1", "percentiles", "episode"] = "mean"
    score: Callable[[str, str], float] | None = (
        None  # (prediction, reference) -> value; max over refs
    )
    selectable: bool = False  # may be listed in eval.metrics (the headline metrics of a run)
    headline: bool = False  # shown by default in the browser, paired tests and score plots
    prefix: bool = False  # name is a prefix: evidence_recall_at_<k>
    # (prediction, question) -> value, or None when the metric does not apply to the question (a
    # benchmark's official score that depends on the question's category)
    score_question: Callable[[str, Question], float | None] | None = None
    label: str | None = None  # the label a label_f1 metric scores
    scorer: str = "lexical"  # the scorer that fills it (Score.kind; eval/metrics/scorers.py)
    # read from the clock (a latency, a build's seconds): differs between runs of one config, so
    # reproducibility checks (warm == cold, concurrent == sequential) leave it out
    timed: bool = False


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
    # MemoryAgentBench (dataset=mab): the official per-sub-dataset rules (eval/metrics/mab.py)
    Metric(
        "mab_accuracy",
        True,
        "accuracy",
        "scores",
        "MemoryAgentBench's headline per sub-dataset: substring EM (AR, CR), EM (ICL, DetectiveQA)",
        score_question=mab.mab_accuracy,
        selectable=True,
    ),
    Metric(
        "mab_substring_exact_match",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's substring exact match (normalised gold inside the normalised answer)",
        score_question=mab.mab_substring_exact_match,
        selectable=True,
    ),
    Metric(
        "mab_exact_match",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's exact match",
        score_question=mab.mab_exact_match,
        selectable=True,
    ),
    Metric(
        "mab_f1",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's token F1",
        score_question=mab.mab_f1,
        selectable=True,
    ),
    Metric(
        "mab_rouge_l_f1",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's ROUGE-L F1",
        score_question=mab.mab_rouge_l_f1,
    ),
    Metric(
        "mab_rouge_lsum_f1",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's ROUGE-Lsum F1",
        score_question=mab.mab_rouge_lsum_f1,
    ),
    Metric(
        "mab_recall",
        True,
        "overlap",
        "scores",
        "MemoryAgentBench's element recall: EventQA 1 if every gold element is in the answer, "
        "RULER-NIAH the share of gold elements in it",
        score_question=mab.mab_recall,
    ),
    # BEAM (dataset=beam): the rubric-nugget judge and event ordering (eval/judge/nuggets.py)
    Metric(
        "beam_nugget",
        True,
        "accuracy",
        "scores",
        "BEAM's rubric judge: the mean of the rubric items' verdicts (1 / 0.5 / 0), one request each",
        selectable=True,
        scorer="official_judge",
    ),
    Metric(
        "beam_event_order",
        True,
        "accuracy",
        "scores",
        "BEAM's event ordering: normalised Kendall tau-b x F1 of the answer's lines aligned to the rubric",
        selectable=True,
        scorer="official_judge",
    ),
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
# Forgetting and stale memory (issue 45, eval/metrics/forgetting.py): questions whose gold carries an
# update (dataset.forget); lower is better for all but forget_abstain.
METRICS += (
    Metric(
        "forget_leak",
        False,
        "retrieval",
        "retrieval",
        "a retrieved item's provenance (derived items included) holds a unit the stream deleted",
        scorer="forgetting",
    ),
    Metric(
        "forget_answer_leak",
        False,
        "accuracy",
        "scores",
        "the answer states the deleted fact (half its words or more)",
        scorer="forgetting",
    ),
    Metric(
        "forget_abstain",
        True,
        "accuracy",
        "scores",
        "the answer to a question about a deleted fact says it does not know",
        scorer="forgetting",
    ),
    Metric(
        "stale_retrieval",
        False,
        "retrieval",
        "retrieval",
        "superseded evidence retrieved with the current evidence absent or ranked below it",
        scorer="forgetting",
    ),
    Metric(
        "stale_answer",
        False,
        "accuracy",
        "scores",
        "the answer states the superseded value of a corrected fact, not the current one",
        scorer="forgetting",
    ),
    Metric(
        "forget_answer_leak_judge",
        False,
        "accuracy",
        "scores",
        "the judge finds the answer states the deleted fact (eval/judge/forgetting.py)",
        scorer="forget_judge",
    ),
    Metric(
        "stale_answer_judge",
        False,
        "accuracy",
        "scores",
        "the judge finds the answer states the superseded value of a corrected fact",
        scorer="forget_judge",
    ),
)

# Per question, in seconds, p50 / p95 beside mean and CI (eval/run/timing.py, scorers.Latency)
_LATENCY = (
    (
        "search_latency_s",
        "seconds to retrieve a question's context: search_backend_s + search_compute_s",
    ),
    (
        "search_backend_s",
        "latency of the retrieval's backend calls (chat, embedding) when they were made, cached or not",
    ),
    (
        "search_compute_s",
        "the retrieval's own compute: its wall time not spent waiting on a backend (measured each run)",
    ),
    (
        "answer_latency_s",
        "latency of the answer call when it was made, cached or not (a memory that answers "
        "itself: its backend calls plus its compute)",
    ),
    ("total_latency_s", "search_latency_s + answer_latency_s"),
)
# Per episode, mean and CI over the episodes (eval/metrics/ingestion.py)
_INGESTION = (
    ("ingest_calls", False, "LLM replies an episode's build used (cached or not)"),
    ("ingest_tokens", False, "prompt + completion tokens of an episode's build"),
    ("ingest_embed_texts", False, "texts an episode's build embedded"),
    (
        "ingest_s",
        False,
        "seconds to build an episode's memory: its backend calls' latency when made plus its own compute",
    ),
    ("ingest_s_per_unit", False, "ingest_s per inserted unit (dialogue turn, chunk)"),
    ("ingest_usd", False, "estimated dollars of an episode's build at the configured prices"),
    (
        "memory_items",
        None,
        "items the built memory holds (its stored units unless the system counts its own items)",
    ),
    ("memory_tokens", None, "tokens of those items"),
)
METRICS += tuple(
    Metric(
        name,
        False,
        "latency",
        "latency",
        doc,
        aggregate="percentiles",
        scorer="latency",
        timed=True,
    )
    for name, doc in _LATENCY
) + tuple(
    Metric(
        name,
        better,
        "cost",
        "ingestion",
        doc,
        aggregate="episode",
        scorer="ingestion",
        timed=name.startswith("ingest_s"),
    )
    for name, better, doc in _INGESTION
)
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
    prediction: str, references: list[str], question: Question | None = None
) -> dict[str, float]:
    """Every metric with a ``score`` function, each the max over the references; with ``question``,
    also every ``score_question`` metric that applies to it."""
    if not references:
        raise lexical.MetricError("a sample has no reference answer")
    out = {
        m.name: max(m.score(prediction, ref) for ref in references)
        for m in _LEXICAL
        if m.score is not None
    }
    for m in _LEXICAL:
        value = m.score_question(prediction, question) if m.score_question and question else None
        if value is not None:
            out[m.name] = value
    return out
