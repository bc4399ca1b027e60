"""Evidence recall against hand-made provenance."""

from __future__ import annotations

import json
import math

import pytest
from memharness.eval.record.scores import value
from memharness.eval.run.evidence import recall_scores, unit_index
from memharness.eval.run.runner import run
from memharness.memsys.types import Episode, Evidence, Question, RetrievedItem, Unit


def episode() -> Episode:
    # article A: units 0-2, article B: units 3-4, article C: unit 5
    sources = ["A", "A", "A", "B", "B", "C"]
    units = [
        Unit(id=f"u{i}", text=f"text {i}", source_id=s, position=i) for i, s in enumerate(sources)
    ]
    return Episode(id="ep", units=units, questions=[])


def item(*unit_ids: str) -> RetrievedItem:
    return RetrievedItem(
        text="x", score=1.0, node_id="n-" + "-".join(unit_ids), source_unit_ids=unit_ids
    )


def test_source_evidence_is_found_through_any_unit_of_the_source():
    q = Question(
        id="q",
        text="?",
        answers=("a",),
        position=6,
        evidence=(
            Evidence(source_id="A", position=0),
            Evidence(source_id="C", position=5),
            Evidence(source_id="A", position=0),
        ),
    )  # A listed twice counts once
    items = [item("u4"), item("u2"), item("u9-unknown"), item("u5")]
    scores = recall_scores(q, items, unit_index(episode()), {"k": [1, 2, 3]})
    assert scores == {
        "evidence_recall_at_1": 0.0,
        "evidence_recall_at_2": 0.5,
        "evidence_recall_at_3": 0.5,
        "evidence_recall": 1.0,
        "evidence_units": 3.0,
    }


def test_span_evidence_needs_a_unit_inside_the_span():
    q = Question(
        id="q",
        text="?",
        answers=("a",),
        position=6,
        evidence=(Evidence(source_id="ep", position=1, end=3),),
    )  # units 1 and 2 (MSC-E window)
    units = unit_index(episode())
    assert recall_scores(q, [item("u0"), item("u3")], units, {"k": [1]})["evidence_recall"] == 0.0
    assert recall_scores(q, [item("u0"), item("u2")], units, {"k": [1]}) == {
        "evidence_recall_at_1": 0.0,
        "evidence_recall": 1.0,
        "evidence_units": 2.0,
    }
    # a summary whose provenance spans the window finds it at rank 1
    assert (
        recall_scores(q, [item("u0", "u1", "u4")], units, {"k": [1]})["evidence_recall_at_1"] == 1.0
    )


def test_no_gold_evidence_gives_no_value():
    q = Question(id="q", text="?", answers=("a",), position=6)
    assert recall_scores(q, [item("u0")], unit_index(episode())) == {}


def test_runs_record_evidence_recall_per_sample(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(make_cfg("memory=full_context", "dataset.budget_tokens=100000"), out)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert all(value(s, "evidence_recall") == 1.0 for s in samples)  # everything is in the context
    assert metrics["metrics"]["evidence_recall"]["n"] == len(samples)
    narrow = run(make_cfg("memory=memorystream", "dataset.top_k=1"), tmp_path / "narrow")
    assert narrow["metrics"]["evidence_recall"]["mean"] < 1.0
    assert narrow["metrics"]["evidence_recall_at_1"]["mean"] == pytest.approx(
        narrow["metrics"]["evidence_recall"]["mean"]
    )


def test_source_level_scores_follow_longmemevals_official_definitions():
    # gold sources A and C; retrieved sources in order: B (u4), A (u2), C (u5)
    q = Question(
        id="q",
        text="?",
        answers=("a",),
        position=6,
        evidence=(Evidence(source_id="A", position=0), Evidence(source_id="C", position=5)),
    )
    items = [item("u4", "u3"), item("u2"), item("u5")]
    scores = recall_scores(q, items, unit_index(episode()), {"k": [], "source_k": [2, 3]})
    # the official dcg: rel[0] + rel[1] / log2(2) + rel[2] / log2(3); ideal = 1 + 1 for two golds
    assert scores["source_recall_all_at_2"] == 0.0 and scores["source_recall_all_at_3"] == 1.0
    assert scores["source_ndcg_any_at_2"] == pytest.approx(1 / 2)
    assert scores["source_ndcg_any_at_3"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    no_source = recall_scores(q, items, unit_index(episode()), {"k": [1]})
    assert not any(key.startswith("source_") for key in no_source)  # off unless configured
