"""The registry's entries for benchmarks' own metrics (MemoryAgentBench, BEAM, MemBench) and for the
forgetting protocol (eval/metrics/registry.py lists them with the rest, in this order)."""

from __future__ import annotations

from memharness.eval.metrics import mab, membench
from memharness.eval.metrics.metric import Metric

MAB_BEAM: tuple[Metric, ...] = (
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
)

# MemBench (dataset=membench): the upstream letter rule (eval/metrics/membench.py); its retrieval recall is
# evidence_recall_at_10 over the target steps, its efficiency the measured ingest_s and search_latency_s
MEMBENCH: tuple[Metric, ...] = (
    Metric(
        "membench_accuracy",
        True,
        "accuracy",
        "scores",
        "MemBench's accuracy: the reply, spaces and newlines removed, is the gold letter (or "
        '{"choice": letter}); anything else scores 0',
        score_question=membench.membench_accuracy,
        selectable=True,
    ),
    Metric(
        "membench_unparsed",
        False,
        "accuracy",
        "scores",
        "MemBench replies that name no option as upstream reads them (scored 0 by membench_accuracy)",
        score_question=membench.membench_unparsed,
    ),
)

# Forgetting and stale memory (issue 45, eval/metrics/forgetting.py): questions whose gold carries an
# update (dataset.forget); lower is better for all but forget_abstain.
FORGETTING: tuple[Metric, ...] = (
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
        "the judge finds the answer still gives the deleted fact (eval/judge/forgetting.py)",
        scorer="forget_judge",
    ),
    Metric(
        "forget_abstain_judge",
        True,
        "accuracy",
        "scores",
        "the judge finds the answer to a question about a deleted fact declines to answer",
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
