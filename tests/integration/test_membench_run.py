"""dataset=membench end to end with the scripted double (fast): MemBench's accuracy read from the raw
reply beside the lenient mc_accuracy, the target steps' recall, and the official headline."""

from __future__ import annotations

import json

from memharness.eval.cli.run_command import official_headline
from memharness.eval.record.scores import value
from memharness.eval.run.runner import run
from paths import FIXTURES


def test_membench_run_scores_the_reply_as_upstream_reads_it(make_cfg, tmp_path):
    script = json.dumps(
        [
            ["Mara Quill do for a living", "B"],
            ["higher degree", "D. Tess Varga"],  # mc_accuracy reads D; upstream's equality fails
            ["harbour clean-up", '{"choice": "A"}'],
            ["Oskar live now", "A"],
        ]
    )
    cfg = make_cfg(
        "memory=full_context",
        "dataset=membench",
        f"dataset.loader.path={FIXTURES / 'membench'}",
        f"llm.backend.script={script}",
    )
    metrics = run(cfg, tmp_path / "run")
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    by_q = {s["question"]: s for s in samples}
    assert len(by_q) == 4
    mara = by_q["What does my cousin Mara Quill do for a living?"]
    assert value(mara, "membench_accuracy") == 1.0 and value(mara, "evidence_recall_at_10") == 1.0
    degree = by_q["Which colleague has the higher degree?"]
    assert value(degree, "membench_accuracy") == 0.0 and value(degree, "membench_unparsed") == 1.0
    assert value(degree, "mc_accuracy") == 1.0
    assert value(by_q["Where is the harbour clean-up?"], "membench_accuracy") == 1.0
    oskar = by_q["Where does my brother Oskar live now?"]
    assert value(oskar, "membench_accuracy") == 0.0 and value(oskar, "membench_unparsed") == 0.0
    assert metrics["metrics"]["membench_accuracy"]["mean"] == 0.5
    assert metrics["metrics"]["membench_unparsed"]["mean"] == 0.25
    assert official_headline(metrics) == (
        "MemBench accuracy (membench_accuracy) 0.500 over 4 questions"
    )


def test_the_capacity_protocol_gives_accuracy_per_bucket_of_tokens_seen(make_cfg, tmp_path):
    script = json.dumps([["Mara Quill do for a living", "B"], ["", "A"]])
    cfg = make_cfg(
        "memory=full_context",
        "dataset=membench",
        f"dataset.loader.path={FIXTURES / 'membench'}",
        "dataset.loader.qa_types=[simple]",
        "dataset.loader.capacity_bucket=100",
        f"llm.backend.script={script}",
    )
    metrics = run(cfg, tmp_path / "run")
    # asked after (tokens seen): Mara 35, 72, 107, 138 (always "B", right); the comparison 69, 100
    # (target [0, 1]; "A", wrong); the clean-up 35, 68 ("A", right)
    assert metrics["counts"]["questions"] == 4 + 2 + 2
    curve = metrics["breakdowns"]["membench_tokens"]
    assert {k: v["n"] for k, v in curve.items()} == {"0000000-0000099": 5, "0000100-0000199": 3}
    assert curve["0000000-0000099"]["membench_accuracy"]["mean"] == 0.8
    assert curve["0000100-0000199"]["membench_accuracy"]["mean"] == 2 / 3
