"""The scorers of run format 3: every metric names the scorer that fills it, each scorer writes
only its own kind of score, and a sample record carries the scorer's details, not flat fields."""

from __future__ import annotations

from memharness.eval.metrics import registry
from memharness.eval.metrics.scorers import ANSWER_SCORERS, ScoreContext, references
from memharness.eval.record import scores
from memharness.memsys.types import Question
from omegaconf import OmegaConf


def test_every_metric_names_a_known_scorer():
    assert {m.scorer for m in registry.METRICS} == set(registry.SCORERS)
    assert all(m.scorer == "lexical" for m in registry.METRICS if m.score or m.score_question)


def _record(mode, prediction):
    return {"status": "scored", "mode": mode, "prediction": prediction, "context_tokens": 7}


def test_answer_scorers_fill_scores_with_their_kind_and_details():
    mc = Question("m", "Colour?", (), 0, options=("red", "blue", "green"), gold_option=1)
    claim = Question("c", "The sky is green.", ("unfaithful",), 0)
    free = Question("g", "Where?", ("Lisbon",), 0)
    pending = [
        (mc, [], _record("multiple_choice", "B")),
        (claim, [], _record("claim_verification", "faithful, I think")),
        (free, [], _record("generative", "In Lisbon")),
        (free, [], {"status": "answer_failed", "prediction": ""}),
    ]
    ctx = ScoreContext(OmegaConf.create({}))
    for scorer in ANSWER_SCORERS:
        scorer.score(pending, ctx)
    mc_rec, claim_rec, free_rec, failed = (r for _, _, r in pending)
    assert mc_rec["scores"]["mc_accuracy"] == {
        "value": 1.0,
        "kind": "choice",
        "details": {"predicted_option": 1, "status": "parsed"},
    }
    assert scores.value(mc_rec, "exact_match") == 1.0  # the chosen option's text against "blue"
    assert scores.value(claim_rec, "claim_accuracy") == 0.0
    assert scores.detail(claim_rec, "claim_accuracy", "predicted_label") == "faithful"
    assert scores.value(free_rec, "rouge_l_recall") == 1.0 and scores.value(free_rec, "f1") < 1.0
    assert free_rec["scores"]["context_tokens"] == {"value": 7, "kind": "latency", "details": {}}
    kinds = {name: s["kind"] for name, s in free_rec["scores"].items()}
    assert kinds == {name: registry.lookup(name).scorer for name in kinds}
    assert "scores" not in failed  # a failed answer is never scored


def test_references_are_the_answers_or_the_gold_option():
    assert references(Question("a", "?", ("x", "y"), 0)) == ["x", "y"]
    assert references(Question("b", "?", (), 0, options=("p", "q"), gold_option=0)) == ["p"]
