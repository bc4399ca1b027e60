"""CAM's ACC-L (conf/judge/official/cam_acc_l.yaml, merged for dataset=qmsum | odsum_story | odsum_meeting):
one judge call per reference, CAM's exact-'yes' verdict, the best verdict over the references, metric
acc_l; checked by hand on invented replies."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
from hydra import compose, initialize_config_dir
from memharness.eval.judge import official
from memharness.eval.metrics import registry
from memharness.eval.record import scores
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT


def _compose(dataset: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=[f"dataset={dataset}"])


@pytest.fixture(scope="module")
def cfg():
    return _compose("qmsum")


@pytest.fixture(scope="module")
def proto(cfg):
    return OmegaConf.to_container(cfg.judge.official, resolve=True)


def test_every_summary_dataset_gets_the_one_acc_l_protocol(proto):
    for name in ("odsum_story", "odsum_meeting"):
        assert OmegaConf.to_container(_compose(name).judge.official, resolve=True) == proto
    assert proto["metric"] == "acc_l" and registry.lookup("acc_l") is not None
    assert registry.lookup("acc_l").higher_is_better is True
    assert _compose("narrativeqa").judge.get("official") is None  # F1 / EM only, no ACC-L


def test_one_prompt_per_reference_with_question_answer_and_that_reference(proto):
    q = Question("s1", "What is the plot?", ("Ref one.", "Ref two."), 0)
    reqs = official.requests_for(q, "A boy finds a map.", proto)
    assert len(reqs) == 2
    texts = [r.messages[-1][1] for r in reqs]
    assert "What is the plot?" in texts[0] and "A boy finds a map." in texts[0]
    assert "Ref one." in texts[0] and "Ref two." not in texts[0]
    assert "Ref two." in texts[1] and "Ref one." not in texts[1]
    assert all(r.max_tokens == 500 and r.choices is None for r in reqs)


def test_cams_verdict_is_an_exact_yes():
    rule = "exact_yes"
    assert official.verdict("YES", rule) == 1.0 and official.verdict("  yes\n", rule) == 1.0
    assert official.verdict("Yes.", rule) == 0.0  # CAM compares the whole reply to "yes"
    assert official.verdict("yes, mostly", rule) == 0.0 and official.verdict("NO", rule) == 0.0
    assert official.unclear("Yes.") and official.unclear("It agrees") and not official.unclear("No")
    assert official.verdict("Yes.") == 1.0  # LongMemEval's rule is unchanged
    with pytest.raises(ValueError, match="judge.official.verdict"):
        official.verdict("yes", "maybe")


class _Judge:
    def __init__(self, replies):
        self.replies, self.seen = list(replies), []
        self.model_id = "scripted"

    def complete(self, requests, desc=""):
        self.seen += requests
        return [SimpleNamespace(text=self.replies.pop(0), ok=True) for _ in requests]


def _record(prediction):
    return {"status": "scored", "mode": "generative", "prediction": prediction, "scores": {}}


def test_judge_all_keeps_the_best_verdict_over_references_and_counts_unclear(cfg, proto):
    qs = [
        Question("a", "Q1?", ("r1", "r2", "r3"), 0),  # no, YES, no -> 1
        Question("b", "Q2?", ("r1",), 0),  # "Yes." -> 0 and unclear
        Question("c", "Q3?", ("r1", "r2"), 0),  # no, no -> 0
        Question("d", "Q4?", ("r1",), 0),  # empty answer: 0, never judged
    ]
    records = [_record("x"), _record("y"), _record("z"), {**_record(""), "answer_empty": True}]
    judge = _Judge(["no", "YES", "no", "Yes.", "No", "no"])
    services = SimpleNamespace(meter=SimpleNamespace(stage=lambda name: nullcontext()))
    pending = [(q, None, r) for q, r in zip(qs, records, strict=True)]
    official.judge_all(pending, cfg, services, SimpleNamespace(primary=judge))
    assert len(judge.seen) == 6
    assert [scores.value(r, "acc_l") for r in records] == [1.0, 0.0, 0.0, 0.0]
    assert {r["scores"]["acc_l"]["kind"] for r in records} == {"official_judge"}
    assert [scores.status(r, "acc_l") for r in records] == [
        "parsed",
        "unclear",
        "parsed",
        "answer_empty",
    ]
    assert scores.detail(records[0], "acc_l", "reply") == "no | YES | no"
    samples = [
        {"question_id": q.id, "categories": {}, "scores": r["scores"]}
        for q, r in zip(qs, records, strict=True)
    ]
    acc = official.accuracies(samples, proto)
    assert acc["overall"] == pytest.approx(1 / 4) and acc["judged"] == 4
    assert acc["per_category"] == {"default": {"accuracy": 0.25, "n": 4}}
    summary = official.summary(samples, cfg, SimpleNamespace(primary=judge))
    assert summary["metric"] == "acc_l" and summary["unclear"] == 1
    assert summary["verdict"] == "reply.strip().lower() == 'yes'" and summary["per_reference"]


def test_the_summary_eval_config_gives_room_for_a_summary_and_keeps_acc_l():
    from memharness.eval.run.validate import validate_config

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "dataset=odsum_meeting",
                "eval=summary",
                "data_dir=/tmp/x",
                "cache.path=/tmp/x/c",
            ],
        )
    validate_config(cfg)
    assert cfg.eval.answer.max_tokens == 500 and "{context}" in cfg.eval.answer.prompt
    assert cfg.eval.judge.prompt == _compose("odsum_meeting").eval.judge.prompt  # judging unchanged
    assert cfg.judge.official.metric == "acc_l"
