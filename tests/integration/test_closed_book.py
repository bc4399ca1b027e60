"""Closed-book pass and accuracy on the questions the model cannot answer without memory."""

from __future__ import annotations

import json

import pytest
import records
from memharness.data_prep.base import subset
from memharness.data_prep.sample import load as load_sample
from memharness.eval.judge.prompt import reference_text
from memharness.eval.run import closed_book
from memharness.eval.run.runner import run


def test_needs_memory_keeps_only_closed_book_failures():
    def sample(judge, closed="none"):
        values = {"judge": judge, **({} if closed == "none" else {"closed_book_accuracy": closed})}
        return records.sample("q", values)

    samples = [
        sample(1.0, 1.0),
        sample(1.0, 0.0),
        sample(0.0, 0.0),
        sample(1.0, None),  # unparsed: neither kept nor counted
        sample(0.0),  # no closed-book pass
    ]
    assert closed_book.needs_memory(samples) == samples[1:3]
    out = closed_book.summarize(samples, ["judge"], 100, 0.95, 0)
    assert out["judge:needs_memory"]["mean"] == 0.5 and out["judge:needs_memory"]["n"] == 2
    assert (
        out["closed_book_accuracy"]["mean"] == pytest.approx(1 / 3)
        and out["closed_book_accuracy"]["n"] == 3
    )
    assert closed_book.summarize(samples[4:], ["judge"], 100, 0.95, 0) == {}


def test_closed_book_run_filters_questions_the_model_knows(make_cfg, tmp_path):
    qs = [q for ep in subset(load_sample(), 4, 0, "type").episodes for q in ep.questions]
    known, ref = qs[0], reference_text(qs[0])
    cfg = make_cfg("memory=full_context", "dataset.limit=4", "eval.closed_book.enabled=true")
    cfg.llm.backend.script = [
        [
            f"Answer this question with a short answer of a few words.\nQuestion: {known.text}",
            ref,
        ],  # known closed-book
        [f"Predicted: {ref} ->", "1"],
        ["| Predicted: ", "0"],
    ]
    metrics = run(cfg, tmp_path / "r")
    samples = {
        s["question_id"]: s
        for s in map(json.loads, (tmp_path / "r" / "samples.jsonl").read_text().splitlines())
    }
    assert samples[known.id]["scores"]["closed_book_accuracy"] == {
        "value": 1.0,
        "kind": "closed_book",
        "details": {
            "prediction": ref,
            "status": "scored",
            "criterion": "judge",
            "judge_status": "parsed",
        },
    }
    assert all(samples[q.id]["scores"]["closed_book_accuracy"]["value"] == 0.0 for q in qs[1:])
    m = metrics["metrics"]
    assert m["closed_book_accuracy"]["mean"] == 0.25 and m["judge:needs_memory"]["n"] == 3
    assert m["f1:needs_memory"]["n"] == 3 and m["judge"]["n"] == 4
    assert (
        metrics["calls"]["closed_book"]["calls"] > 0
    )  # its own stage, not the method's answer cost
    assert metrics["intrinsic"]["answer"]["calls"] == 4
    from memharness.eval.report.comparison import build_report

    md = build_report([tmp_path / "r"], tmp_path / "t", "cb")["md"].read_text()
    section = md.split("## Memory-attributable accuracy")[1].split("##")[0]
    assert (
        "closed_book_accuracy" in section
        and "judge:needs_memory" in section
        and "0.250 [" in section
    )
