"""MemoryAgentBench's official scores, pinned by cases worked by hand as upstream's
utils/eval_other_utils.py (@455306d) computes them."""

from __future__ import annotations

import pytest
from memharness.eval.metrics import lexical, mab, registry
from memharness.memsys.types import Question


def _q(source: str | None, *answers: str) -> Question:
    cats = {"mab_source": source} if source else {}
    return Question("q", "?", tuple(answers), 0, categories=cats)


def test_f1_zero_when_yes_no_differs_where_squad_f1_gives_partial_credit():
    assert mab.f1("yes", "yes it is") == 0.0
    assert lexical.token_f1("yes", "yes it is") == 0.5  # the house F1 differs here
    assert mab.f1("river Osk in Pell", "the river Osk") == pytest.approx(2 / 3)  # P 2/4, R 2/2


def test_parsed_answer_is_the_answer_line_else_the_first_line():
    assert mab.parse_answer("Thinking...\nAnswer: Brenn\nmore") == "Brenn"
    assert mab.parse_answer("answer: answer: x") == "x"  # the repeated prefix removed too
    assert mab.parse_answer("43\nbecause") == "43"


def test_conflict_resolution_takes_substring_match_of_raw_or_parsed():
    q = _q("factconsolidation_sh_6k", "Brenn")
    s = mab.official_scores(
        "Reasoning first.\nAnswer: The capital is Brenn.", q.categories["mab_source"], q.answers
    )
    assert s["substring_exact_match"] == 1.0 and s["exact_match"] == 0.0
    assert mab.mab_accuracy("It is Brenn, not Tarn.", q) == 1.0
    assert mab.mab_accuracy("Tarn", q) == 0.0


def test_icl_scores_the_parsed_line_strictly():
    q = _q("icl_banking77_5900shot_balance", "43")
    assert mab.mab_accuracy("label: 43", q) == 0.0  # the README's own example
    assert mab.mab_accuracy("43\nlabel 43 because", q) == 1.0
    assert mab.mab_substring_exact_match("label: 43", q) == 1.0


def test_eventqa_recall_needs_every_element_in_the_raw_answer():
    q = _q("eventqa_65536", "she buys bread", "argue about the price")
    assert mab.mab_recall("They ARGUE ABOUT THE PRICE, then she buys bread.", q) == 1.0
    assert mab.mab_recall("she buys bread", q) == 0.0
    assert mab.mab_accuracy("she buys bread", q) == 1.0  # substring match, best over golds


def test_niah_recall_is_the_share_and_the_only_score():
    q = _q("ruler_niah_mq", "4821", "7730")
    assert mab.official_scores("the numbers are 4821 and 12", "ruler_niah_mq", q.answers) == {
        "recall": 0.5
    }
    assert mab.mab_accuracy("4821", q) == 0.5 and mab.mab_f1("4821", q) is None


def test_rouge_l_f1_and_recall_best_over_golds():
    s = mab.answer_metrics("the town of Galloway", ("Galloway",))
    assert s["rougeL_f1"] == pytest.approx(0.4) and s["rougeL_recall"] == 1.0  # P 1/4, R 1
    assert mab.answer_metrics("the town of Galloway", ("Galloway", "town of Galloway"))[
        "rougeL_f1"
    ] == pytest.approx(6 / 7)


def test_judged_and_unscored_sources_have_no_headline_and_other_datasets_no_value():
    assert mab.mab_accuracy("x", _q("longmemeval_s*", "x")) is None
    assert mab.mab_accuracy("x", _q("infbench_sum_eng_shots2", "x")) is None
    assert mab.mab_exact_match("x", _q("recsys_redial_full", "1")) is None
    assert mab.mab_accuracy("x", _q("detective_qa", "x")) == 1.0
    assert mab.mab_accuracy("x", _q(None, "x")) is None


def test_the_registry_scores_mab_questions_only():
    scores = registry.answer_scores("Brenn", ["Brenn"], _q("factconsolidation_sh_6k", "Brenn"))
    assert scores["mab_accuracy"] == 1.0 and scores["mab_rouge_lsum_f1"] == 1.0
    assert "mab_accuracy" not in registry.answer_scores("Brenn", ["Brenn"], _q(None, "Brenn"))
    assert registry.lookup("mab_recall").higher_is_better is True


def test_the_run_prints_each_benchmarks_official_aggregate_as_its_headline():
    from memharness.eval.cli.run_command import official_headline

    mab_run = {"metrics": {"mab_accuracy": {"mean": 0.5, "n": 2}, "judge": {"mean": 1.0, "n": 2}}}
    assert (
        official_headline(mab_run)
        == "MemoryAgentBench accuracy (mab_accuracy) 0.500 over 2 questions"
    )
    beam_run = {
        "metrics": {"judge": {"mean": 1.0}},
        "official_judge": {
            "beam": {"overall": 0.625, "per_ability": {"a": 0.75, "b": 0.5}, "n": {"a": 2, "b": 2}}
        },
    }
    assert official_headline(beam_run).startswith(
        "BEAM official score 0.625 (mean over 2 abilities of 4"
    )
    assert official_headline({"metrics": {"judge": {"mean": 1.0}}}) is None
