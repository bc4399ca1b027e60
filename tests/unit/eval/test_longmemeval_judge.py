"""LongMemEval's judge protocol (conf/judge/official/longmemeval.yaml): prompt choice, verdict rule and accuracies as
the official print_qa_metrics.py computes them, on hand-checked examples."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from memharness.eval.judge import official
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT


@pytest.fixture(scope="module")
def proto():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["dataset=longmemeval"])
    return OmegaConf.to_container(cfg.judge.official, resolve=True)


def _q(qid, qtype, answer="gold"):
    return Question(qid, "What did I do?", (answer,), 0, categories={"type": qtype})


def test_each_type_gets_its_prompt_and_abstention_ids_the_abstention_prompt(proto):
    temporal = official.prompt_for(_q("a1", "temporal-reasoning", "18 days"), "19 days", proto)
    assert "off-by-one" in temporal and "Correct answer: 18 days" in temporal
    assert "Model response: 19 days" in temporal
    pref = official.prompt_for(_q("a2", "single-session-preference", "likes herons"), "x", proto)
    assert "Rubric: likes herons" in pref and "off-by-one" not in pref
    update = official.prompt_for(_q("a3", "knowledge-update"), "x", proto)
    assert "updated answer" in update
    abstain = official.prompt_for(_q("a4_abs", "temporal-reasoning", "not said"), "x", proto)
    assert "Explanation: not said" in abstain and "off-by-one" not in abstain
    plain = {
        official.prompt_for(_q("a5", t), "x", proto)
        for t in ("single-session-user", "single-session-assistant", "multi-session")
    }
    assert len(plain) == 1 and "only part of the information" in plain.pop()
    with pytest.raises(ValueError, match="type='open-domain', which has no prompt"):
        official.prompt_for(_q("a6", "open-domain"), "x", proto)


def test_the_verdict_is_the_official_substring_rule():
    assert official.verdict("Yes.") == 1.0 and official.verdict("no") == 0.0
    assert official.verdict("No, not yes") == 1.0  # 'yes' anywhere counts, as in evaluate_qa.py
    assert official.verdict("The eyes say no") == 1.0  # even inside a word: the official quirk
    assert official.verdict("Correct.") == 0.0


def _sample(qid, qtype, value):
    score = {"value": value, "kind": official.KIND, "details": {}}
    return {"question_id": qid, "categories": {"type": qtype}, "scores": {official.METRIC: score}}


def test_accuracies_task_averaged_overall_and_abstention_by_hand(proto):
    samples = [
        _sample("u1", "single-session-user", 1.0),
        _sample("u2_abs", "single-session-user", 0.0),  # counts in its type and in abstention
        _sample("m1", "multi-session", 1.0),
        _sample("m2", "multi-session", 1.0),
        _sample("m3_abs", "multi-session", 1.0),
        _sample("t1", "temporal-reasoning", 1.0),
        _sample("k1", "knowledge-update", 0.0),
        _sample("a1", "single-session-assistant", 1.0),
        _sample("p1", "single-session-preference", 1.0),
        _sample("p2", "single-session-preference", 0.0),
        _sample("x1", "knowledge-update", None),  # failed earlier: no verdict, left out
    ]
    acc = official.accuracies(samples, proto)
    # per type: ssu 1/2, ms 3/3, tr 1/1, ku 0/1, ssa 1/1, ssp 1/2
    assert acc["per_category"]["single-session-user"] == {"accuracy": 0.5, "n": 2}
    assert acc["per_category"]["multi-session"] == {"accuracy": 1.0, "n": 3}
    assert acc["per_category"]["knowledge-update"] == {"accuracy": 0.0, "n": 1}
    assert acc["task_averaged"] == pytest.approx((0.5 + 1 + 1 + 0 + 1 + 0.5) / 6)  # 0.6667
    assert acc["overall"] == pytest.approx(7 / 10)  # u1 m1 m2 m3 t1 a1 p1
    assert acc["abstention"] == {"accuracy": 0.5, "n": 2}
    assert acc["judged"] == 10 and acc["categories_missing"] == []


def test_a_missing_type_is_named_and_left_out_of_the_task_average(proto):
    acc = official.accuracies(
        [_sample("u1", "single-session-user", 1.0), _sample("t1", "temporal-reasoning", 0.0)], proto
    )
    assert acc["task_averaged"] == 0.5 and acc["overall"] == 0.5
    assert len(acc["categories_missing"]) == 4 and "multi-session" in acc["categories_missing"]
    assert acc["abstention"] == {"accuracy": None, "n": 0}
