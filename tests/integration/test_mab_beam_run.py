"""dataset=mab and dataset=beam end to end with scripted doubles (fast): the official scores in the
samples and metrics.json, the nugget verdicts in the score details, and the official headline."""

from __future__ import annotations

import json

from memharness.eval.cli.run_command import official_headline
from memharness.eval.record.scores import detail, value
from memharness.eval.run.runner import run
from paths import FIXTURES

NUGGET = "Rubric criterion:"  # a phrase only the nugget prompt holds
SAME_EVENT = "same event or fact"  # the event-ordering equivalence prompt


def _samples(out):
    return [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]


def test_mab_run_scores_by_the_benchmarks_rules(make_cfg, tmp_path):
    script = json.dumps(
        [
            ["Question: Which river", "The Osk, I think."],
            ["Question: What is the capital", "Answer: Brenn"],
        ]
    )
    cfg = make_cfg(
        "memory=full_context",
        "dataset=mab",
        "dataset.loader.competency=cr",
        "dataset.loader.source=factconsolidation_sh_6k",
        f"dataset.loader.path={FIXTURES / 'mab'}",
        "dataset.loader.chunk_size=128",
        f"llm.backend.script={script}",
    )
    metrics = run(cfg, tmp_path / "run")
    by_q = {s["question"]: s for s in _samples(tmp_path / "run")}
    capital = by_q["What is the capital of Veloria?"]
    assert value(capital, "mab_accuracy") == 1.0 and value(capital, "mab_exact_match") == 1.0
    river = by_q["Which river flows through Pell7?"]
    assert value(river, "mab_accuracy") == 1.0 and value(river, "mab_exact_match") == 0.0
    assert metrics["metrics"]["mab_accuracy"] == {
        **metrics["metrics"]["mab_accuracy"],
        "mean": 1.0,
        "n": 2,
    }
    assert (
        official_headline(metrics)
        == "MemoryAgentBench accuracy (mab_accuracy) 1.000 over 2 questions"
    )


def test_beam_run_judges_every_nugget_and_reports_the_official_aggregate(make_cfg, tmp_path):
    script = json.dumps(
        [
            [NUGGET, '{"score": 0.5, "reason": "partly"}'],
            [SAME_EVENT, "NO"],
            ["fertiliser", "I don't know that."],
        ]
    )
    cfg = make_cfg(
        "memory=full_context",
        "dataset=beam",
        f"dataset.loader.path={FIXTURES / 'beam'}",
        "dataset.loader.conversations=[2]",
        f"llm.backend.script={script}",
    )
    metrics = run(cfg, tmp_path / "run")
    samples = _samples(tmp_path / "run")
    assert metrics["counts"]["questions"] == 4 == metrics["counts"]["scored"]
    for s in samples:
        nuggets = detail(s, "beam_nugget", "nuggets")
        assert [n["score"] for n in nuggets] == [0.5] * len(nuggets) and value(
            s, "beam_nugget"
        ) == 0.5
    order = next(s for s in samples if s["categories"]["ability"] == "event_ordering")
    assert (
        value(order, "beam_event_order") == 0.0 and detail(order, "beam_event_order", "f1") == 0.0
    )
    official = metrics["official_judge"]
    assert (
        official["judge_unparsed"] == 0
        and official["per_category"]["summarization"]["accuracy"] == 0.5
    )
    beam = official["beam"]
    assert set(beam["per_ability"]) == {
        "abstention",
        "event_ordering",
        "knowledge_update",
        "summarization",
    }
    assert beam["per_ability"]["knowledge_update"] == 0.5
    assert (
        official["nugget_audit"]["reference_mean"] == 0.5
    )  # the scripted judge is not a good judge
    assert official_headline(metrics).startswith(f"BEAM official score {beam['overall']:.3f}")
