"""BEAM's scores pinned by cases worked by hand as upstream's compute_metrics.py / report_results.py
(@b2a3ee8) compute them, and the nugget judge protocol run with a scripted judge."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
from fakes import ScriptedJudge
from hydra import compose, initialize_config_dir
from memharness.eval.judge import official
from memharness.eval.metrics import beam
from memharness.eval.record import scores
from memharness.memsys.types import Question
from paths import ROOT

SAME = {("A", "a"), ("B", "b"), ("C", "c")}


def same(ref, line):
    return (ref, line) in SAME


def test_a_swapped_pair_keeps_f1_and_loses_a_third_of_tau():
    s = beam.event_ordering_score(["A", "B", "C"], ["a", "c", "b"], same)
    assert (s["precision"], s["recall"], s["f1"]) == (1.0, 1.0, 1.0)
    assert s["tau_norm"] == pytest.approx(2 / 3)  # tau-b (2 - 1) / 3 = 1/3 -> (1/3 + 1) / 2
    assert s["final_score"] == pytest.approx(2 / 3)


def test_unmatched_and_empty_lines_count_as_false_positives_ranked_last():
    s = beam.event_ordering_score(["A", "B", "C"], ["a", "x", ""], same)
    assert s["f1"] == pytest.approx(1 / 3)  # P 1/3, R 1/3
    # ranks over [A, B, C, x, ""], missing = 6: C = 4, D = 4, one tie on each side -> tau-b 0
    assert s["tau_norm"] == pytest.approx(0.5) and s["final_score"] == pytest.approx(1 / 6)
    assert beam.align(["A", "B"], ["a", "a"], same) == ["A", "a"]  # an item is used once


def test_nugget_replies_scores_and_the_official_aggregate():
    assert beam.parse_nugget_reply('{"score": 0.5, "reason": "partly"}') == 0.5
    assert beam.parse_nugget_reply('```json\n{"score": 1.0, "reason": "ok"}\n```') == 1.0
    assert beam.parse_nugget_reply('Here: {"score": 0, "reason": "no"} done') == 0.0
    assert (
        beam.parse_nugget_reply('{"score": 0.7}') is None and beam.parse_nugget_reply("yes") is None
    )
    assert beam.nugget_score([1.0, 0.5, 0.0]) == 0.5
    assert beam.nugget_score([1.0, 0.5, 0.0], truncate_half=True) == pytest.approx(1 / 3)
    agg = beam.official_aggregate(
        [
            {"ability": "event_ordering", "nugget": 0.0, "tau_norm": 0.5},
            {"ability": "event_ordering", "nugget": 0.0, "tau_norm": 1.0},
            {"ability": "knowledge_update", "nugget": 1.0},
            {"ability": "knowledge_update", "nugget": 0.0},
            {"ability": "summarization", "nugget": None},  # not judged: left out
        ]
    )
    assert agg["per_ability"] == {"event_ordering": 0.75, "knowledge_update": 0.5}
    assert agg["overall"] == 0.625


@pytest.fixture(scope="module")
def cfg():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=["dataset=beam"])


def _record(prediction):
    return {"status": "scored", "mode": "generative", "prediction": prediction, "scores": {}}


def test_one_judge_call_per_nugget_every_verdict_recorded_and_event_order_scored(cfg):
    ku = Question(
        "k",
        "When?",
        ("evening",),
        0,
        categories={"ability": "knowledge_update"},
        rubric=("evening", "not morning"),
    )
    eo = Question(
        "e", "Order?", ("...",), 0, categories={"ability": "event_ordering"}, rubric=("A", "B")
    )
    bad = Question("u", "What?", ("x",), 0, categories={"ability": "summarization"}, rubric=("x",))
    records = [_record("every evening"), _record("b\na"), _record("x")]
    replies = [
        '{"score": 1.0, "reason": "said evening"}',
        '{"score": 0.5, "reason": "hedged"}',
        '{"score": 1, "reason": "A"}',  # eo nuggets
        '{"score": 0.0, "reason": "B"}',
        "NO",
        "YES",
        "YES",
        "NO",  # pairs (A,b) (B,b) (A,a) (B,a)
        "I think it is fine",  # bad: no score
        '{"score": 1.0, "reason": "x"}',  # canaries: ku's rubric against its own gold ...
        '{"score": 1.0, "reason": "x"}',
        '{"score": 0.5, "reason": "x"}',  # ... and against eo's gold "...": one false half-accept
        '{"score": 0.0, "reason": "x"}',
    ]
    judge = ScriptedJudge(replies)
    second = ScriptedJudge(['{"score": 1.0}', '{"score": 0.0}', '{"score": 1.0}', "?", "{}"])
    services = SimpleNamespace(meter=SimpleNamespace(stage=lambda name: nullcontext()))
    pending = [(q, None, r) for q, r in zip((ku, eo, bad), records, strict=True)]
    official.judge_all(pending, cfg, services, SimpleNamespace(primary=judge, second=second))
    assert len(judge.seen) == 13 and "not morning" in judge.seen[1].messages[-1][1]
    assert "Response: ..." in judge.seen[11].messages[-1][1]  # the other question's gold
    assert len(second.seen) == 5  # every nugget again, never the canaries
    assert [scores.value(r, "beam_nugget") for r in records] == [0.75, 0.5, None]
    assert scores.detail(records[0], "beam_nugget", "nuggets")[1] == {
        "nugget": "not morning",
        "score": 0.5,
        "reply": '{"score": 0.5, "reason": "hedged"}',
        "ok": True,
    }
    assert scores.status(records[2], "beam_nugget") == "judge_unparsed"
    # "b\na" aligned to [B, A]: F1 1, tau-b -1 -> tau_norm 0, score 0
    assert scores.value(records[1], "beam_event_order") == 0.0
    assert scores.detail(records[1], "beam_event_order", "f1") == 1.0
    summary = official.summary(
        [{**r, "question_id": q.id, "categories": q.categories} for q, _, r in pending], cfg, None
    )
    assert (
        summary["judge_unparsed"] == 1
        and summary["per_category"]["knowledge_update"]["accuracy"] == 0.75
    )
    assert summary["beam"]["per_ability"] == {"event_ordering": 0.0, "knowledge_update": 0.75}
    audit = summary["nugget_audit"]
    assert audit["reference_mean"] == 1.0 and audit["other_reference_mean"] == 0.25
    # nuggets both judges read: ku (1, 1) (0.5, 0), eo (1, 1); eo's "?" and bad (unparsed) left out
    assert audit["judge_vs_judge2"]["n"] == 3
    assert audit["judge_vs_judge2"]["agreement"] == pytest.approx(2 / 3)


def test_constrained_nugget_requests_carry_the_verdict_schema(cfg):
    from memharness.eval.judge import nuggets
    from omegaconf import OmegaConf

    proto = OmegaConf.to_container(cfg.judge.official, resolve=True)
    q = Question("k", "When?", ("evening",), 0, rubric=("evening",))
    (free,) = nuggets.nugget_requests(q, "every evening", proto)
    (held,) = nuggets.nugget_requests(q, "every evening", {**proto, "constrained": True})
    assert not free.json_output and free.json_schema is None
    assert held.json_output and '"enum": [0.0, 0.5, 1.0]' in held.json_schema
    assert (
        "Rubric criterion: evening" in held.messages[-1][1] and '{"score":' in held.messages[-1][1]
    )


def test_without_a_second_judge_the_audit_runs_the_canaries_only(cfg):
    q = Question("k", "When?", ("evening",), 0, categories={"ability": "a"}, rubric=("evening",))
    o = Question("o", "Where?", ("park",), 0, categories={"ability": "a"}, rubric=("park",))
    records = [_record("evening"), _record("park")]
    judge = ScriptedJudge(['{"score": 1.0, "reason": ""}'] * 4)
    services = SimpleNamespace(meter=SimpleNamespace(stage=lambda name: nullcontext()))
    pending = [(q, None, records[0]), (o, None, records[1])]
    official.judge_all(pending, cfg, services, SimpleNamespace(primary=judge, second=None))
    assert len(judge.seen) == 4  # two nuggets, then k's rubric against "evening" and "park"
    assert scores.detail(records[0], "beam_nugget", "canaries") == {
        "reference": [1.0],
        "other_reference": [1.0],
    }
    assert scores.detail(records[0], "beam_nugget", "judge2") is None
