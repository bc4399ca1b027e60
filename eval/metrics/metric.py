"""One metric's declaration (``Metric``): the type every registry entry is (eval/metrics/registry.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

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
