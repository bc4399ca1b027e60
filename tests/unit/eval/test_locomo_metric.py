"""LoCoMo's official score (eval/metrics/locomo.py) on hand-checked examples.

Every expected value below was worked out by hand from snap-research/locomo
task_eval/evaluation.py (normalise: commas, case, punctuation, a/an/the/and; Porter stems; token
F1; category 1 comma split; category 3 gold cut at ";"; category 5 "not mentioned" rule) and also
agreed with that code run on the same inputs."""

from __future__ import annotations

import pytest
from memharness.eval.metrics import lexical, locomo
from memharness.eval.metrics.registry import answer_scores, lookup
from memharness.memsys.types import Question


def q(category: int, answers=("x",)) -> Question:
    return Question("c/qa-0", "?", tuple(answers), 0, categories={"locomo_category": str(category)})


@pytest.mark.parametrize(
    "prediction, gold, category, expected",
    [
        # articles, "and", commas and punctuation go; order does not matter
        ("The pottery class", "pottery class", 4, 1.0),
        ("Vera and Tomas", "Tomas, Vera", 4, 1.0),
        # Porter stems: running -> run, races/race -> race; "ran" stays "ran": 1 of 2 tokens each side
        ("running races", "ran the race", 4, 0.5),
        # an integer gold read as text: "in 1998." -> [in, 1998]: P 1/2, R 1 -> 2/3
        ("in 1998.", "1998", 2, 2 / 3),
        # no common token is 0, even when both sides are empty (unlike SQuAD's 1)
        ("", "", 4, 0.0),
        # category 1: gold parts [Vera | rode to the lake], one prediction part "Vera" -> (1 + 0) / 2
        ("Vera", "Vera, rode to the lake", 1, 0.5),
        # parts [Vera | they rode to a lake]: Vera 1; [they rode to lake] vs [rode to lake]:
        # P 3/4, R 1 -> 6/7; mean (1 + 6/7) / 2 = 13/14
        ("Vera, they rode to a lake", "Vera, rode to the lake", 1, 13 / 14),
        # the same pair as category 4 (no split): [vera they rode to lake] vs [vera rode to lake]: 8/9
        ("Vera, they rode to a lake", "Vera, rode to the lake", 4, 8 / 9),
        # gold parts [cello | 30 September 2023]: "the cello" -> 1; [30 sept] vs [30 septemb 2023]:
        # P 1/2, R 1/3 -> 0.4; mean 0.7
        ("30 Sept, the cello", "cello, 30 September 2023", 1, 0.7),
        # category 3: the gold is cut at its first ";" -> "ceramics"
        ("ceramics", "ceramics; art teaching", 3, 1.0),
        # category 5: only the answer is read, for the two phrases, in any case
        ("Not mentioned in the conversation", "to pace herself", 5, 1.0),
        ("It is NOT MENTIONED.", "x", 5, 1.0),
        ("No information available", "x", 5, 1.0),
        ("to pace herself", "to pace herself", 5, 0.0),
    ],
)
def test_official_score_on_hand_checked_examples(prediction, gold, category, expected):
    assert locomo.score(prediction, gold, category) == pytest.approx(expected, abs=1e-12)


def test_category_3_cut_and_porter_differ_from_the_harness_f1():
    # without the cut, [ceramics art teaching] would give 2 * (1 * 1/3) / (4/3) = 0.5
    assert locomo.f1("ceramics", "ceramics; art teaching") == pytest.approx(0.5)
    # the harness's SQuAD F1 has no stemmer: "running" and "run" do not match there
    assert lexical.token_f1("running", "run") == 0.0 and locomo.f1("running", "run") == 1.0


def test_registry_entries_score_by_the_raw_category_number_only():
    assert lookup("locomo_f1").higher_is_better and lookup("locomo_adversarial").selectable
    multi = q(1, ("Vera, rode to the lake",))
    scores = answer_scores("Vera", ["Vera, rode to the lake"], multi)
    assert scores["locomo_f1"] == 0.5 and "locomo_adversarial" not in scores
    assert scores["f1"] == pytest.approx(2 * (1 * 0.25) / 1.25)  # harness F1 beside it
    adv = q(5, ())
    scores = answer_scores("Not mentioned in the conversation", ["Not mentioned"], adv)
    assert scores["locomo_adversarial"] == 1.0 and "locomo_f1" not in scores
    # another dataset's question (no LoCoMo number) gets neither
    plain = Question("x", "?", ("Vera",), 0, categories={"category": "multi-hop"})
    assert not {"locomo_f1", "locomo_adversarial"} & set(answer_scores("Vera", ["Vera"], plain))
    # relabelling (the other category map) changes nothing: the rule follows the number
    relabelled = Question(
        "c/qa-0", "?", ("Vera, rode to the lake",), 0,
        categories={"category": "single-hop", "locomo_category": "1"},
    )  # fmt: skip
    assert locomo.locomo_f1("Vera", relabelled) == 0.5


def test_unknown_category_is_refused():
    with pytest.raises(ValueError, match="1-5"):
        locomo.score("a", "a", 6)
