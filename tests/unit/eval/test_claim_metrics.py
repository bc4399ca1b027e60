"""F1_P / F1_N (FABLES, CAM Table 2) on hand-checked examples, the verdict parser, the registry
entries, and the claim-verification answer request."""

from __future__ import annotations

import pytest
from memharness.eval.metrics import aggregate, claims, registry
from memharness.eval.run.answer import answer_request, is_claim, is_multiple_choice
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT
from records import sample, scores

F, U = "faithful", "unfaithful"


def _samples(pairs, **extra):
    return [
        sample(
            f"c{i}",
            references=[gold],
            mode="claim_verification",
            scores=scores(
                {"claim_accuracy": float(pred == gold)},
                claim_accuracy={
                    "predicted_label": pred,
                    "status": "parsed" if pred else "claim_unparsed",
                },
            ),
            **extra,
        )
        for i, (gold, pred) in enumerate(pairs)
    ]


def test_f1_per_label_on_a_hand_checked_example():
    # gold F F F U U, predicted F F U U (unparsed):
    #   faithful:   TP 2 (c0 c1), FP 0, FN 1 (c2)              -> 2*2 / (4 + 0 + 1) = 0.8
    #   unfaithful: TP 1 (c3), FP 1 (c2), FN 1 (c4, unparsed)  -> 2*1 / (2 + 1 + 1) = 0.5
    pairs = [(F, F), (F, F), (F, U), (U, U), (U, None)]
    out = aggregate.summarize_all(_samples(pairs), ["f1_p", "f1_n"], 200, 0.95, 0)
    assert out["f1_p"]["mean"] == pytest.approx(0.8) and out["f1_n"]["mean"] == pytest.approx(0.5)
    assert out["f1_p"]["n"] == out["f1_n"]["n"] == 5
    for key in ("f1_p", "f1_n"):
        assert 0.0 <= out[key]["ci_low"] <= out[key]["mean"] <= out[key]["ci_high"] <= 1.0


def test_f1_is_not_the_mean_of_per_claim_values_and_is_symmetric_in_its_label():
    # all claims faithful, all predicted faithful: F1_P 1; F1_N undefined (no unfaithful anywhere)
    out = aggregate.summarize_all(_samples([(F, F)] * 4), ["f1_p", "f1_n"], 100, 0.95, 0)
    assert out["f1_p"]["mean"] == 1.0 and "f1_n" not in out
    # everything predicted unfaithful: F1_P 0; F1_N = 2*1 / (2 + 3 + 0) = 0.4
    out = aggregate.summarize_all(_samples([(F, U)] * 3 + [(U, U)]), ["f1_p", "f1_n"], 100, 0.95, 0)
    assert out["f1_p"]["mean"] == 0.0 and out["f1_n"]["mean"] == pytest.approx(0.4)


def test_failed_and_non_claim_samples_are_not_claims():
    rows = _samples([(F, F), (U, U)])
    rows.append(sample("x", references=[U], mode="claim_verification", status="answer_failed"))
    rows.append(sample("y", references=["Paris"], mode="generative"))
    assert aggregate.claim_pairs(rows) == [(F, F), (U, U)]
    assert aggregate.summarize_all([rows[-1]], ["f1_p"], 10, 0.95, 0) == {}


def test_codes_and_f1_of_codes():
    assert [claims.code(F, F, F), claims.code(U, F, F), claims.code(F, U, F)] == [3, 1, 2]
    assert claims.code(U, None, F) == 0
    assert claims.f1_of_codes([3, 3, 1, 2, 0]) == pytest.approx(4 / 6)
    assert claims.f1_of_codes([0, 0]) == 0.0


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("faithful", F),
        ("Unfaithful.", U),
        ("The claim is not faithful to the book", U),
        ("Faithful: the book says so", F),
        ("supported", F),
        ("unsupported", U),
        ("I do not know", None),
        ("faithful or unfaithful", None),  # both: no single verdict
        ("", None),
    ],
)
def test_parse_verdict(reply, verdict):
    assert claims.parse_verdict(reply) == verdict


def test_registry_declares_both_once_as_label_f1():
    for name, label in (("f1_p", F), ("f1_n", U)):
        entry = registry.lookup(name)
        assert entry is not None and entry.aggregate == "label_f1" and entry.label == label
        assert entry.higher_is_better and entry.score is None
        assert [m.name for m in registry.METRICS].count(name) == 1
    assert {"f1_p", "f1_n"} <= set(registry.names(selectable=True))


def test_claim_questions_get_the_claim_prompt_constrained_to_the_two_labels():
    cfg = OmegaConf.load(ROOT / "conf" / "eval" / "default.yaml").answer
    q = Question(
        "c", "Tobin relit the lantern.", (U,), 3, categories={"task": "claim_verification"}
    )
    assert is_claim(q, "auto") and not is_multiple_choice(q, "auto")
    req = answer_request(q, [], cfg)
    assert req.choices == (F, U) and "Claim: Tobin relit the lantern." in req.messages[-1][1]
    plain = Question("q", "Who relit it?", ("Verity",), 3)
    assert not is_claim(plain, "auto") and is_claim(plain, "claim_verification")
    assert answer_request(plain, [], cfg).choices is None
    with pytest.raises(ValueError, match="claim_verification"):
        is_claim(plain, "verify")


def _scored_claims(pairs, cfg):
    """Records of (gold, reply) claims scored by the claim scorer under ``cfg``."""
    from memharness.eval.metrics.scorers import Claim, ScoreContext

    pending = [
        (
            Question(f"c{i}", "A claim.", (gold,), 0),
            [],
            {"status": "scored", "mode": "claim_verification", "prediction": reply},
        )
        for i, (gold, reply) in enumerate(pairs)
    ]
    Claim().score(pending, ScoreContext(OmegaConf.create(cfg)))
    return [
        {**r, "id": q.id, "references": list(q.answers), "categories": {}} for q, _, r in pending
    ]


def test_an_unparsed_verdict_counts_as_the_other_label_as_in_cams_code():
    # gold F F F U U, replies F F U U "no idea" (unparsed). CAM's claim_verification.py counts any
    # reply other than the gold as FN of the gold label and FP of the other:
    #   faithful:   TP 2, FP 1 (c4), FN 1 (c2)   -> 4 / 6
    #   unfaithful: TP 1, FP 1 (c2), FN 1 (c4)   -> 2 / 4
    pairs = [(F, F), (F, F), (F, U), (U, U), (U, "no idea")]
    rows = _scored_claims(pairs, {})
    out = aggregate.summarize_all(rows, ["f1_p", "f1_n"], 50, 0.95, 0)
    assert out["f1_p"]["mean"] == pytest.approx(4 / 6) and out["f1_n"]["mean"] == pytest.approx(0.5)
    last = rows[-1]["scores"]["claim_accuracy"]
    assert last["value"] == 0.0 and last["details"]["status"] == "claim_unparsed"
    assert last["details"]["predicted_label"] is None and last["details"]["counted_label"] == F
    assert aggregate.failure_counts(rows)["claim_unparsed"] == 1
    # neither: a miss of the gold label only (the harness's earlier rule): F1_P 0.8
    rows = _scored_claims(pairs, {"eval": {"answer": {"claim_unparsed": "neither"}}})
    out = aggregate.summarize_all(rows, ["f1_p", "f1_n"], 50, 0.95, 0)
    assert out["f1_p"]["mean"] == pytest.approx(0.8) and out["f1_n"]["mean"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="claim_unparsed"):
        claims.counted_label(F, None, "drop")
